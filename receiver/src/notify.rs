//! Telling a person's devices that an agent needs them: for each
//! `attention.needed` a batch stored, a Web Push to every device of the
//! owning account that opted in (the words at the tier that device chose,
//! Allow / Deny actions for a permission), and a POST to each notification
//! URL the account set (a webhook, an ntfy topic).
//!
//! This module owns the words of a notification and the fan-out. It must not
//! hold up the batch's answer (it runs after, on its own task), never retries
//! into a storm (one try each; a subscription the push service says is gone
//! is dropped), and never logs a payload or an endpoint's path.

use crate::app::App;
use crate::db::{Db, args};
use crate::push::{PushError, PushOptions, Subscription, Urgency};
use serde_json::{Value, json};

/// The longest message text put in a notification, in characters.
const MESSAGE_MAX: usize = 200;

/// What a device at `tier` is told of `event`: 0 says only that an agent
/// needs you and where; 1 and up name the tool or the question too.
pub fn words(event: &Value, tier: i64) -> Value {
    let who =
        protocol::harness_display_name(event["harness"]["name"].as_str().unwrap_or("An agent"));
    let data = &event["data"];
    let kind = data["kind"].as_str().unwrap_or("");
    let folder = event["session"]["cwd"].as_str().unwrap_or("");
    let tool = data["tool"].as_str().filter(|_| tier >= 1);
    let message = data["message"]
        .as_str()
        .filter(|m| tier >= 1 && !m.is_empty())
        .map(|m| crate::board::cut(m, MESSAGE_MAX));
    let title = match (kind, tool) {
        ("permission", Some(t)) => format!("{who} wants to run {t}"),
        ("permission", None) => format!("{who} asks for a permission"),
        ("question" | "elicitation", _) => format!("{who} has a question"),
        ("error", _) => format!("{who} stopped on an error"),
        _ => format!("{who} needs you"),
    };
    let body = [message.as_deref(), Some(folder).filter(|f| !f.is_empty())]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = json!({
        "type": "attention.needed",
        "title": title,
        "body": body,
        "session": format!(
            "{}:{}",
            event["harness"]["name"].as_str().unwrap_or(""),
            event["session"]["id"].as_str().unwrap_or("")
        ),
        "attention": data["attention_id"],
    });
    if kind == "permission" {
        out["actions"] = json!(["allow", "deny"]);
    }
    out
}

/// Sends every notification for `attentions` of `owner`; errors are counted
/// in the log, never raised.
pub async fn attentions(db: &Db, app: &App, owner: &str, attentions: Vec<Value>, log: bool) {
    if owner.is_empty() || attentions.is_empty() {
        return;
    }
    let subs = match db
        .rows(
            "SELECT endpoint, subscription, tier FROM push_subscriptions WHERE account = $1",
            args![owner],
        )
        .await
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sessionpipe-receiver: notify: {e}");
            return;
        }
    };
    let urls = db
        .rows(
            "SELECT url, tier FROM notify_urls WHERE account = $1",
            args![owner],
        )
        .await
        .unwrap_or_default();
    for event in &attentions {
        for row in &subs {
            let (Ok(endpoint), Ok(text), Ok(tier)) = (row.text(0), row.text(1), row.int(2)) else {
                continue;
            };
            let Some(sub) = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| Subscription::from_json(&v, true).ok())
            else {
                continue;
            };
            let payload = words(event, tier).to_string();
            let opts = PushOptions {
                ttl_s: 3600,
                urgency: Urgency::High,
                ..PushOptions::default()
            };
            match crate::push::send(
                &app.push_client,
                &app.vapid,
                &sub,
                payload.as_bytes(),
                &opts,
            )
            .await
            {
                Ok(_) => {}
                Err(PushError::Gone { .. }) => {
                    let _ = db
                        .exec(
                            "DELETE FROM push_subscriptions WHERE endpoint = $1",
                            args![endpoint],
                        )
                        .await;
                }
                Err(e) if log => eprintln!("sessionpipe-receiver: push: {e}"),
                Err(_) => {}
            }
        }
        for row in &urls {
            let (Ok(url), Ok(tier)) = (row.text(0), row.int(1)) else {
                continue;
            };
            let w = words(event, tier);
            let sent = app
                .push_client
                .post(&url)
                .header("title", w["title"].as_str().unwrap_or(""))
                .header("content-type", "text/plain; charset=utf-8")
                .body(w["body"].as_str().unwrap_or("").to_string())
                .send()
                .await;
            if let (Err(e), true) = (sent, log) {
                eprintln!("sessionpipe-receiver: notify url: {}", e.without_url());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_follow_the_tier() {
        let e = json!({
            "harness": {"name": "claude-code"},
            "session": {"id": "s1", "cwd": "~/work/alpha"},
            "data": {"attention_id": "perm-1", "kind": "permission", "tool": "Bash",
                     "message": "Claude wants to run: rm -rf build"},
        });
        let t0 = words(&e, 0);
        assert_eq!(t0["title"], "Claude Code asks for a permission");
        assert_eq!(t0["body"], "~/work/alpha");
        assert_eq!(t0["actions"], json!(["allow", "deny"]));
        assert_eq!(t0["session"], "claude-code:s1");
        let t1 = words(&e, 1);
        assert_eq!(t1["title"], "Claude Code wants to run Bash");
        assert_eq!(
            t1["body"],
            "Claude wants to run: rm -rf build\n~/work/alpha"
        );
        let idle = json!({"harness": {"name": "codex"}, "session": {"id": "x"},
                          "data": {"attention_id": "a", "kind": "idle"}});
        assert_eq!(words(&idle, 2)["title"], "Codex needs you");
        assert!(words(&idle, 2).get("actions").is_none());
    }
}
