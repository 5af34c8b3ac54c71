//! Local approvals, seen from the tray: the permission prompts the person at this
//! machine may answer now, across every session and harness (the overview's
//! `approvals` whose `answerable` is true), the lines the menu shows for each,
//! what an answerable prompt's notification carries (Allow and Deny besides
//! Open), and the menu item ids that name one prompt.
//!
//! Pure functions over `GET /api/overview`'s JSON. What is answerable is the
//! core's (`answerable`: local approvals are on and the prompt's hook waits);
//! the words are the protocol's (`protocol::asked`: what runs, where, cut the
//! same way) at the notification tier, so the menu, the notification and the
//! phone page say the same thing.
//! Must not decide anything else, and must not answer: only a person's click does
//! (`notices::answer_clicked`).

use crate::daemon_api::Decision;
use serde_json::Value;
use sessionpipe_core::notify::display_name;
use sessionpipe_core::protocol::asked::{self, Asked, cut, cut_left};

/// The menu shows at most this many prompts; the window shows them all.
pub const MAX_PROMPTS: usize = 8;
/// A menu line is cut to this many characters.
const LINE: usize = 64;

/// A permission prompt whose hook waits for an answer from this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    /// `harness:session-id`
    pub session: String,
    pub attention: String,
    pub harness: String,
    /// The session's title (else its folder, else its id's start: the core's).
    pub title: String,
    pub cwd: Option<String>,
    pub tool: Option<String>,
    pub message: Option<String>,
}

/// The overview's answerable prompts, in its order (sessions needing the
/// person first, most recent first).
pub fn answerable(overview: &Value) -> Vec<Prompt> {
    let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_string);
    overview["approvals"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|a| a["answerable"] == true)
        .filter_map(|a| {
            let session = text(&a["session"])?;
            let harness = text(&a["harness"])
                .or_else(|| session.split_once(':').map(|(h, _)| h.to_string()))?;
            Some(Prompt {
                attention: text(&a["attention_id"])?,
                title: text(&a["title"]).unwrap_or_else(|| session.clone()),
                cwd: text(&a["cwd"]),
                tool: text(&a["tool"]),
                message: text(&a["message"]),
                harness,
                session,
            })
        })
        .collect()
}

/// Whether the overview lists the attention `key` (`harness:id:attention`) as a
/// permission prompt that is not answerable yet: its hook may be a moment from
/// waiting (the hub takes it once ingest has committed the event).
pub fn not_yet_answerable(overview: &Value, key: &str) -> bool {
    overview["approvals"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .any(|a| {
            a["kind"] == "permission"
                && a["answerable"] != true
                && a["session"]
                    .as_str()
                    .zip(a["attention_id"].as_str())
                    .is_some_and(|(s, id)| format!("{s}:{id}") == key)
        })
}

impl Prompt {
    /// The key `notify::decide` gives this attention's notice.
    pub fn notice_key(&self) -> String {
        format!("{}:{}", self.session, self.attention)
    }

    /// `Claude Code · Fix the login test · ~/src/app`: which harness, which
    /// session (its title, its folder).
    pub fn who(&self) -> String {
        let mut parts = vec![display_name(&self.harness), cut(&self.title, 40)];
        if let Some(cwd) = self.cwd.as_deref().filter(|c| *c != self.title) {
            parts.push(cut_left(cwd, 32));
        }
        parts.join(" · ")
    }

    /// What will run (`Bash touch made.txt`), with what the notification tier
    /// lets through (the tool and its command are tier 1); `None` when it shows
    /// neither. The protocol's words, cut as the page and a push cut them.
    pub fn what(&self, notify_tier: u8) -> Option<String> {
        let asked = Asked {
            harness: &self.harness,
            kind: "permission",
            tool: self.tool.as_deref(),
            message: self.message.as_deref(),
            title: Some(&self.title),
            cwd: self.cwd.as_deref(),
            // A local prompt holds all its hook sent; the reader's tier decides.
            tier: 3,
        };
        asked::words(&asked, notify_tier).what
    }

    /// The menu's lines for this prompt: who asks, then what will run.
    pub fn menu_lines(&self, notify_tier: u8) -> (String, String) {
        let what = self
            .what(notify_tier)
            .unwrap_or_else(|| "wants your permission".into());
        (cut(&self.who(), LINE), cut(&what, LINE))
    }

    /// The notification's body for this prompt: the core's words (what will run
    /// and where, at the notification tier) and the folder when they do not say it.
    pub fn notification_body(&self, core_body: &str) -> String {
        match self.cwd.as_deref() {
            Some(cwd) if !core_body.contains(cwd) => format!("{core_body}\n{cwd}"),
            _ => core_body.to_string(),
        }
    }
}

/// The actions an answerable prompt's notification carries, as
/// `(action key, label)`: `default` (a click) opens the window.
const ACTIONS: [(&str, &str); 3] = [("default", "Open"), ("allow", "Allow"), ("deny", "Deny")];

/// The actions a notification carries: a click (`default`) always, Allow and
/// Deny when its prompt is answerable.
pub fn actions(answerable: bool) -> &'static [(&'static str, &'static str)] {
    if answerable { &ACTIONS } else { &ACTIONS[..1] }
}

/// What a notification's action means: a decision on its prompt, or a click.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chosen {
    Answer(Decision),
    Open,
    Nothing,
}

/// A notification's response, by its action key (macOS gives the button's label).
pub fn chosen(action: &str) -> Chosen {
    match action {
        "allow" | "Allow" => Chosen::Answer(Decision::Allow),
        "deny" | "Deny" => Chosen::Answer(Decision::Deny),
        "default" => Chosen::Open,
        _ => Chosen::Nothing,
    }
}

/// The unit separator: in no session key or attention id (the protocol's ids
/// are printable).
const SEP: char = '\u{1f}';
const ITEM_PREFIX: &str = "approval:";

/// What a prompt's menu item does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// Allow or Deny.
    Answer(Decision),
    /// Opens the window on the prompt's session.
    Open,
}

impl Item {
    fn word(self) -> &'static str {
        match self {
            Item::Answer(d) => d.as_str(),
            Item::Open => "open",
        }
    }
}

/// The id of a prompt's menu item: it names the prompt itself, so a click on a
/// menu built a moment ago answers that prompt and no other.
pub fn item_id(item: Item, session: &str, attention: &str) -> String {
    format!("{ITEM_PREFIX}{}{SEP}{session}{SEP}{attention}", item.word())
}

/// What a menu item's id does, and the session and attention it names.
pub fn from_item_id(id: &str) -> Option<(Item, &str, &str)> {
    let mut parts = id.strip_prefix(ITEM_PREFIX)?.split(SEP);
    let item = match parts.next()? {
        "open" => Item::Open,
        word => Item::Answer(Decision::parse(word)?),
    };
    let session = parts.next().filter(|s| !s.is_empty())?;
    let attention = parts.next().filter(|s| !s.is_empty())?;
    parts.next().is_none().then_some((item, session, attention))
}

/// A menu label shows `&` as written (muda reads a lone `&` as a mnemonic).
pub fn menu_text(s: &str) -> String {
    s.replace('&', "&&")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn overview() -> Value {
        json!({
            "machine": "m",
            "approvals": [
                {"session": "claude-code:a1", "attention_id": "perm-1", "agent_id": null,
                 "kind": "permission", "tool": "Bash", "message": "Bash touch made-by-allow.txt",
                 "time": "2026-12-01T10:00:00.000Z", "title": "Make the file", "cwd": "~/work/project",
                 "harness": "claude-code", "answerable": true},
                {"session": "codex:c1", "attention_id": "p9", "kind": "permission", "tool": "Bash",
                 "message": "cargo test &&\n  rm -rf target", "title": "~/src/api", "cwd": "~/src/api",
                 "harness": "codex", "answerable": true},
                {"session": "gemini-cli:g1", "attention_id": "n1", "kind": "idle",
                 "title": "g", "cwd": "~/g", "harness": "gemini-cli", "answerable": false},
                {"session": "claude-code:a2", "attention_id": "perm-2", "kind": "permission",
                 "tool": "Bash", "message": "Bash ls", "title": "t", "cwd": "~/t",
                 "harness": "claude-code", "answerable": false}
            ]
        })
    }

    #[test]
    fn the_menu_lists_only_answerable_prompts_with_who_and_what() {
        let prompts = answerable(&overview());
        let keys: Vec<String> = prompts.iter().map(Prompt::notice_key).collect();
        assert_eq!(keys, ["claude-code:a1:perm-1", "codex:c1:p9"]);
        assert_eq!(
            prompts[0].menu_lines(1),
            (
                "Claude Code · Make the file · ~/work/project".to_string(),
                "Bash touch made-by-allow.txt".to_string()
            )
        );
        // A session titled by its folder says it once; a command is one line.
        assert_eq!(
            prompts[1].menu_lines(1),
            (
                "Codex · ~/src/api".to_string(),
                "Bash: cargo test && rm -rf target".to_string()
            )
        );
        assert_eq!(
            menu_text("cargo test && rm"),
            "cargo test &&&& rm",
            "muda shows && as &"
        );
        assert!(answerable(&json!({})).is_empty());
        assert!(answerable(&json!({"approvals": [{"answerable": true}]})).is_empty());
    }

    #[test]
    fn the_notification_tier_decides_what_the_lines_show() {
        let p = &answerable(&overview())[0];
        assert_eq!(p.what(0), None);
        assert_eq!(p.menu_lines(0).1, "wants your permission");
        assert_eq!(p.what(3).as_deref(), Some("Bash touch made-by-allow.txt"));
    }

    #[test]
    fn long_lines_are_cut_to_fit() {
        let mut p = answerable(&overview()).remove(0);
        p.message = Some(format!("Bash {}", "x".repeat(200)));
        p.title = "T".repeat(80);
        p.cwd = Some(format!("~/{}/deep/project", "d".repeat(60)));
        let (who, what) = p.menu_lines(1);
        assert_eq!(what.chars().count(), LINE);
        assert!(what.ends_with('…') && what.starts_with("Bash xxx"));
        assert!(who.chars().count() <= LINE, "{who}");
        assert!(who.starts_with("Claude Code · TTT"), "{who}");
    }

    #[test]
    fn a_notification_carries_allow_and_deny_and_says_where() {
        let p = &answerable(&overview())[0];
        let keys = |a: &[(&str, &str)]| a.iter().map(|(k, _)| k.to_string()).collect::<Vec<_>>();
        assert_eq!(keys(actions(true)), ["default", "allow", "deny"]);
        assert_eq!(keys(actions(false)), ["default"]);
        // The core's body names the title when there is one: the folder is added.
        assert_eq!(
            p.notification_body("Bash touch made-by-allow.txt\nMake the file"),
            "Bash touch made-by-allow.txt\nMake the file\n~/work/project"
        );
        assert_eq!(
            p.notification_body("Bash touch x\n~/work/project"),
            "Bash touch x\n~/work/project"
        );
        assert_eq!(chosen("allow"), Chosen::Answer(Decision::Allow));
        assert_eq!(chosen("Deny"), Chosen::Answer(Decision::Deny));
        assert_eq!(chosen("default"), Chosen::Open);
        assert_eq!(chosen("__closed"), Chosen::Nothing);
    }

    #[test]
    fn a_prompt_not_yet_waiting_is_told_apart() {
        let ov = overview();
        assert!(not_yet_answerable(&ov, "claude-code:a2:perm-2"));
        assert!(!not_yet_answerable(&ov, "claude-code:a1:perm-1"), "waits");
        assert!(
            !not_yet_answerable(&ov, "gemini-cli:g1:n1"),
            "not a permission"
        );
        assert!(!not_yet_answerable(&ov, "codex:zz:p"));
    }

    #[test]
    fn a_menu_item_names_its_prompt() {
        let p = &answerable(&overview())[0];
        let id = item_id(Item::Answer(Decision::Deny), &p.session, &p.attention);
        assert_eq!(
            from_item_id(&id),
            Some((Item::Answer(Decision::Deny), "claude-code:a1", "perm-1"))
        );
        let id = item_id(Item::Open, &p.session, &p.attention);
        assert_eq!(
            from_item_id(&id),
            Some((Item::Open, "claude-code:a1", "perm-1"))
        );
        assert_eq!(from_item_id("session:claude-code:a1"), None);
        assert_eq!(from_item_id("approval:maybe\u{1f}s\u{1f}a"), None);
        assert_eq!(from_item_id("approval:allow\u{1f}s"), None);
        assert_eq!(from_item_id("approval:allow\u{1f}s\u{1f}a\u{1f}x"), None);
    }
}
