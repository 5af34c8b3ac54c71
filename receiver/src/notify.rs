//! Layer 2, notify: telling a person's devices that an agent needs them: for
//! each `attention.needed` a batch stored, a Web Push to every device of the
//! owning account that opted in (the words at the tier that device chose, Allow
//! / Deny actions for a permission), and a POST to each notification URL the
//! account set (a webhook, an ntfy topic).
//!
//! This module owns a notification's shape (its words are the protocol's,
//! `protocol::asked`, as the desktop and the page say them), the fan-out, and the
//! receiver's VAPID key (made once, kept in the database's `settings`). It
//! must not hold up the batch's answer (the events side calls it after, on a
//! task of its own), never retries into a storm (one try each; a subscription
//! the push service says is gone is dropped), never sends but through
//! `egress` (its rule on where, checked again at every send, whatever was
//! stored), and never logs a payload or an endpoint's path.

use crate::db::{Db, DbError, args};
use crate::egress::{self, Egress, EgressError};
use crate::push::{PushError, PushOptions, Subscription, Urgency, Vapid};
use protocol::asked;
use serde_json::{Value, json};
use std::sync::Arc;

/// The `settings` row holding the VAPID key (PKCS#8 DER).
const VAPID_SETTING: &str = "vapid_pkcs8";

/// What sends notifications: the database (who wants them, and how), the
/// VAPID key they are signed with, and where they may go out to.
pub struct Notifier {
    db: Arc<Db>,
    vapid: Vapid,
    egress: Egress,
    /// A line per failed send (the request log's switch).
    log: bool,
}

impl Notifier {
    /// The VAPID key kept for `subject` (or a new one kept now: two processes
    /// starting at once keep the first one written), and requests that give
    /// up after ten seconds, to public addresses only unless
    /// `allow_private` (the operator's `--allow-private-notify`).
    pub async fn open(
        db: Arc<Db>,
        subject: &str,
        log: bool,
        allow_private: bool,
    ) -> Result<Notifier, String> {
        let vapid = vapid_key(&db, subject).await?;
        let egress = Egress::new(allow_private, std::time::Duration::from_secs(10))?;
        Ok(Notifier {
            db,
            vapid,
            egress,
            log,
        })
    }

    /// Whether `url` may be sent to, its host looked up now: for a push
    /// endpoint or a notification URL a person gives.
    pub async fn check_address(&self, url: &str) -> Result<(), EgressError> {
        self.egress.check(url).await
    }

    /// The VAPID public key a browser subscribes with (base64url).
    pub fn vapid_public_key(&self) -> String {
        self.vapid.public_key_b64url()
    }
}

async fn vapid_key(db: &Db, subject: &str) -> Result<Vapid, String> {
    if let Some(der) = read_vapid(db).await.map_err(|e| e.to_string())? {
        return Vapid::from_pkcs8_der(&der, subject).map_err(|e| e.to_string());
    }
    let fresh = Vapid::generate(subject).map_err(|e| e.to_string())?;
    let der = fresh.to_pkcs8_der().map_err(|e| e.to_string())?;
    db.exec(
        "INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
        args![VAPID_SETTING, der],
    )
    .await
    .map_err(|e| e.to_string())?;
    let der = read_vapid(db)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the VAPID key was not kept")?;
    Vapid::from_pkcs8_der(&der, subject).map_err(|e| e.to_string())
}

async fn read_vapid(db: &Db) -> Result<Option<Vec<u8>>, DbError> {
    db.row(
        "SELECT value FROM settings WHERE name = $1",
        args![VAPID_SETTING],
    )
    .await?
    .map(|r| r.bytes(0))
    .transpose()
}

/// What a device at `tier` is told of `event`: the protocol's words
/// (`protocol::asked`, which the desktop notification and the page say too):
/// 0 says only that an agent needs you and where; 1 and up name the tool and
/// the command or the question too.
pub fn words(event: &Value, tier: i64) -> Value {
    let data = &event["data"];
    let kind = data["kind"].as_str().unwrap_or("");
    let reader = u8::try_from(tier.clamp(0, 3)).unwrap_or(0);
    let said = asked::words(&asked::Asked::of_json(event), reader);
    let title = said.headline;
    let body = [said.what, Some(said.place).filter(|p| !p.is_empty())]
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

impl Notifier {
    /// Sends every notification for `attentions` of `owner`; failures are
    /// logged, never raised.
    pub async fn attentions(&self, owner: &str, attentions: Vec<Value>) {
        if owner.is_empty() || attentions.is_empty() {
            return;
        }
        let subs = match self
            .db
            .rows(
                "SELECT endpoint, subscription, tier FROM push_subscriptions WHERE account = $1",
                args![owner],
            )
            .await
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("notify: {e}");
                return;
            }
        };
        let urls = self
            .db
            .rows(
                "SELECT url, tier FROM notify_urls WHERE account = $1",
                args![owner],
            )
            .await
            .unwrap_or_default();
        for event in &attentions {
            for row in &subs {
                self.push(row, event).await;
            }
            for row in &urls {
                let (Ok(url), Ok(tier)) = (row.text(0), row.int(1)) else {
                    continue;
                };
                self.post(&url, &words(event, tier)).await;
            }
        }
    }

    /// One POST of the words `w` to a notification URL; a redirect is not
    /// followed.
    async fn post(&self, url: &str, w: &Value) {
        let (client, url) = match self.egress.client_for(url) {
            Ok(c) => c,
            Err(e) => {
                if self.log {
                    tracing::warn!("notify url: not sent: {e}");
                }
                return;
            }
        };
        let sent = client
            .post(url)
            .header("title", w["title"].as_str().unwrap_or(""))
            .header("content-type", "text/plain; charset=utf-8")
            .body(w["body"].as_str().unwrap_or("").to_string())
            .send()
            .await;
        if !self.log {
            return;
        }
        match sent {
            Ok(r) if r.status().is_redirection() => tracing::warn!(
                "notify url: answered {}: redirects are not followed",
                r.status().as_u16()
            ),
            Ok(r) if !r.status().is_success() => {
                tracing::warn!("notify url: answered {}", r.status().as_u16());
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("notify url: {}", egress::reasons(&e.without_url())),
        }
    }

    /// One Web Push of `event` to the subscription of `row` (endpoint,
    /// subscription, tier); one the push service says is gone is dropped.
    async fn push(&self, row: &crate::db::Row, event: &Value) {
        let (Ok(endpoint), Ok(text), Ok(tier)) = (row.text(0), row.text(1), row.int(2)) else {
            return;
        };
        let Some(sub) = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| Subscription::from_json(&v).ok())
        else {
            return;
        };
        let payload = words(event, tier).to_string();
        let opts = PushOptions {
            ttl_s: 3600,
            urgency: Urgency::High,
            ..PushOptions::default()
        };
        match crate::push::send(&self.egress, &self.vapid, &sub, payload.as_bytes(), &opts).await {
            Ok(_) => {}
            Err(PushError::Gone { .. }) => {
                let _ = self
                    .db
                    .exec(
                        "DELETE FROM push_subscriptions WHERE endpoint = $1",
                        args![endpoint],
                    )
                    .await;
            }
            Err(e) if self.log => tracing::warn!("push: {e}"),
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_follow_the_tier() {
        let e = json!({
            "tier": 3,
            "harness": {"name": "claude-code"},
            "session": {"id": "s1", "cwd": "~/work/alpha"},
            "data": {"attention_id": "perm-1", "kind": "permission", "tool": "Bash",
                     "message": "Bash rm -rf build"},
        });
        let t0 = words(&e, 0);
        assert_eq!(t0["title"], "Claude Code needs your permission");
        assert_eq!(t0["body"], "~/work/alpha");
        assert_eq!(t0["actions"], json!(["allow", "deny"]));
        assert_eq!(t0["session"], "claude-code:s1");
        let t1 = words(&e, 1);
        assert_eq!(t1["title"], "Claude Code wants to run Bash");
        assert_eq!(t1["body"], "Bash rm -rf build\n~/work/alpha");
        let idle = json!({"tier": 2, "harness": {"name": "codex"}, "session": {"id": "x"},
                          "data": {"attention_id": "a", "kind": "idle"}});
        assert_eq!(words(&idle, 2)["title"], "Codex is waiting for you");
        assert!(words(&idle, 2).get("actions").is_none());
    }

    #[test]
    fn a_long_command_is_cut_cleanly_and_the_title_says_where() {
        let command = format!("Bash echo {}", "héllo wörld ".repeat(40));
        let e = json!({
            "tier": 1,
            "harness": {"name": "claude-code"},
            "session": {"id": "s1", "cwd": "~/work/alpha", "title": "Say hello"},
            "data": {"attention_id": "perm-1", "kind": "permission", "tool": "Bash",
                     "message": command},
        });
        let body = words(&e, 3)["body"].as_str().unwrap().to_string();
        let (what, place) = body.split_once('\n').unwrap();
        assert!(
            what.ends_with("wörld…") || what.ends_with("héllo…"),
            "{what}"
        );
        assert!(what.chars().count() <= asked::WHAT_MAX);
        assert_eq!(place, "Say hello · ~/work/alpha");
    }

    /// A plain HTTP server on 127.0.0.1 answering 200 to anything; how many
    /// connections it took.
    fn counting_server() -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
        use std::io::{Read, Write};
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let taken = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&taken);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                count.fetch_add(1, Ordering::SeqCst);
                let mut buf = [0u8; 8192];
                let _ = conn.read(&mut buf);
                let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
            }
        });
        (port, taken)
    }

    #[tokio::test]
    async fn what_was_stored_is_checked_again_at_every_send() {
        use crate::db::Location;
        use std::sync::atomic::Ordering;
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(Location::Folder(dir.path())).await.unwrap());
        let (port, taken) = counting_server();
        // As an earlier receiver kept them, or a name that resolved
        // elsewhere when it was given: two notification URLs and a push
        // subscription on this machine.
        for url in [
            format!("https://127.0.0.1:{port}/hook"),
            format!("http://localhost:{port}/hook"),
        ] {
            db.exec(
                "INSERT INTO notify_urls (account, url, tier, created_ms) VALUES ('a_ann', $1, 0, 0)",
                args![url],
            )
            .await
            .unwrap();
        }
        let ua = {
            use p256::elliptic_curve::Generate;
            p256::SecretKey::try_generate().unwrap()
        };
        let p256dh = {
            use base64::Engine;
            use p256::elliptic_curve::sec1::ToSec1Point;
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(ua.public_key().to_sec1_point(false).as_bytes())
        };
        let endpoint = format!("http://127.0.0.1:{port}/push/x");
        let sub = json!({"endpoint": endpoint, "keys": {"p256dh": p256dh, "auth": "BTBZMqHH6r4Tts7J_aSIgg"}});
        db.exec(
            "INSERT INTO push_subscriptions (endpoint, account, subscription, tier, created_ms)
             VALUES ($1, 'a_ann', $2, 0, 0)",
            args![endpoint, sub.to_string()],
        )
        .await
        .unwrap();
        let event = json!({"harness": {"name": "codex"}, "session": {"id": "s"},
                           "data": {"attention_id": "a", "kind": "idle"}});

        let public_only = Notifier::open(Arc::clone(&db), "mailto:ops@example.org", true, false)
            .await
            .unwrap();
        public_only.attentions("a_ann", vec![event.clone()]).await;
        assert_eq!(taken.load(Ordering::SeqCst), 0, "nothing was connected to");

        // The same rows, with the operator's opt-in: each is reached.
        let private_too = Notifier::open(db, "mailto:ops@example.org", true, true)
            .await
            .unwrap();
        private_too.attentions("a_ann", vec![event]).await;
        assert_eq!(taken.load(Ordering::SeqCst), 3);
    }
}
