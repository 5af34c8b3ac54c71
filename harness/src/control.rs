//! How a verified control message enters a live session through the harness's
//! own hooks (CONTROL.md §6 `turn` and `permission.answer`, §9): the exact
//! bytes a Stop hook prints to hand the model a message, and those a permission
//! hook prints for a decision.
//!
//! An adapter offers these only for hooks its harness documents as taking such
//! an answer; everything else has no answer channel and control acks it
//! `unsupported`. Nothing here decides whether to answer: the daemon's control
//! does, after verification, and never answers `allow` on its own.

/// How long a permission hook waits for a verified answer while the terminal
/// shows its own prompt (the spec's default window).
pub const PERMISSION_WAIT_S: u64 = 120;
/// The timeout written into the harness's config for a permission hook: the
/// wait plus slack, so the harness never kills a hook that is about to answer.
pub const PERMISSION_HOOK_TIMEOUT_S: u64 = PERMISSION_WAIT_S + 30;

/// An account a harness on this machine is signed in to, as control's pair
/// and hello name it (`{harness, id, email}` or `{harness, id, name}`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Account {
    pub harness: String,
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The answers a harness's hooks take.
pub trait ControlHooks: Sync {
    /// What the Stop hook prints so the turn goes on with `framed` (the
    /// message with sessionpipe's frame, `frames::in_place`). `None`: this
    /// harness's Stop takes no message.
    fn turn_answer(&self, _framed: &str) -> Option<String> {
        None
    }
    /// What the permission hook prints for a decision; `note` goes to the model
    /// beside a deny.
    fn permission_answer(&self, _allow: bool, _note: Option<&str>) -> Option<String> {
        None
    }
    /// The accounts its config dirs are signed in to (read, never written).
    fn accounts(&self, _host: &crate::install::Host) -> Vec<Account> {
        Vec::new()
    }
}

/// Claude Code's Stop answer: `{"decision":"block","reason":…}`; the harness
/// continues the turn with the reason as the model's next input.
pub fn stop_block(framed: &str) -> String {
    let mut out = serde_json::json!({ "decision": "block", "reason": framed }).to_string();
    out.push('\n');
    out
}

/// The `PermissionRequest` answer Claude Code and Codex both read:
/// `hookSpecificOutput.decision.behavior` `allow` or `deny`, with `message`
/// for the model on a deny.
pub fn permission_decision(allow: bool, note: Option<&str>) -> String {
    let mut decision = serde_json::json!({ "behavior": if allow { "allow" } else { "deny" } });
    if !allow {
        decision["message"] = serde_json::Value::from(
            note.filter(|n| !n.trim().is_empty())
                .unwrap_or("Denied from the person's device (sessionpipe control)."),
        );
    }
    let mut out = serde_json::json!({
        "hookSpecificOutput": { "hookEventName": "PermissionRequest", "decision": decision }
    })
    .to_string();
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answers_are_the_documented_shapes() {
        let v: serde_json::Value = serde_json::from_str(&stop_block("hi \"there\"")).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"decision":"block","reason":"hi \"there\""})
        );
        let allow: serde_json::Value =
            serde_json::from_str(&permission_decision(true, Some("ignored"))).unwrap();
        assert_eq!(
            allow,
            serde_json::json!({"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}})
        );
        let deny: serde_json::Value =
            serde_json::from_str(&permission_decision(false, Some("Not on main."))).unwrap();
        assert_eq!(
            deny["hookSpecificOutput"]["decision"]["message"],
            "Not on main."
        );
        assert!(permission_decision(false, None).contains("Denied"));
    }
}
