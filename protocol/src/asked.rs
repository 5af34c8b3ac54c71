//! What an `attention.needed` says to a person, in the one set of words every
//! place that shows it uses: the desktop notification (the core's `notify`),
//! the receiver's Web Push and notification URLs, and the phone page's
//! attention card (the receiver answers these words with the board). Also
//! the two sentences pairing says about the tier a receiver gets.
//!
//! Owns the headline (`Claude Code wants to run Bash`), the line of what runs
//! (`Bash touch made.txt`, cut cleanly), the place (title · folder), and
//! which fields a tier lets through (`tiers`' table). Pure: it must not read
//! anything but the event it is given, and never shows a field above the tier
//! it is told (what left the machine was redacted there already).

use crate::Envelope;
use crate::tiers::field_tier;
use crate::validate::harness_display_name;
use serde::Serialize;
use serde_json::Value;

/// Said on the machine and on the page when a receiver gets tier 0: its
/// attentions carry no tool and no command.
pub const HIDDEN_SENTENCE: &str =
    "This machine hides what its agents ask to run: approve on the machine.";

/// Why pairing proposes tier 1, in one line.
pub const TIER_1_SENTENCE: &str = "The phone sees tool names, commands and the files they change, secrets removed, so it can show what you approve.";

/// The tier pairing proposes for the sink a receiver hands over.
pub const PAIRING_TIER: u8 = 1;

/// The longest line of what runs, in characters (a phone's card, a push).
pub const WHAT_MAX: usize = 200;
/// The longest title in the place line.
const TITLE_MAX: usize = 60;
/// The longest folder in the place line (cut from its start: its end says where).
const FOLDER_MAX: usize = 60;

/// The sentence that says what a receiver at `tier` sees of an attention.
pub fn tier_sentence(tier: u8) -> &'static str {
    if tier == 0 {
        HIDDEN_SENTENCE
    } else {
        TIER_1_SENTENCE
    }
}

/// An attention as it arrived: the fields the words are made of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Asked<'a> {
    /// The protocol name (`claude-code`).
    pub harness: &'a str,
    /// `permission`, `question`, `elicitation`, `idle`, `error`.
    pub kind: &'a str,
    pub tool: Option<&'a str>,
    pub message: Option<&'a str>,
    pub title: Option<&'a str>,
    pub cwd: Option<&'a str>,
    /// The tier the event was sent at: what the machine let out.
    pub tier: u8,
}

impl<'a> Asked<'a> {
    /// From a typed envelope (the sender's side).
    pub fn of_envelope(env: &'a Envelope) -> Asked<'a> {
        let data = |k: &str| env.data.get(k).and_then(Value::as_str);
        Asked {
            harness: &env.harness.name,
            kind: data("kind").unwrap_or(""),
            tool: data("tool"),
            message: data("message"),
            title: env.session.title.as_deref(),
            cwd: env.session.cwd.as_deref(),
            tier: env.tier,
        }
    }

    /// From an envelope as JSON (the receiver keeps them so).
    pub fn of_json(event: &'a Value) -> Asked<'a> {
        let data = &event["data"];
        Asked {
            harness: event["harness"]["name"].as_str().unwrap_or(""),
            kind: data["kind"].as_str().unwrap_or(""),
            tool: data["tool"].as_str(),
            message: data["message"].as_str(),
            title: event["session"]["title"].as_str(),
            cwd: event["session"]["cwd"].as_str(),
            tier: event["tier"]
                .as_u64()
                .and_then(|t| u8::try_from(t).ok())
                .unwrap_or(0),
        }
    }
}

/// What an attention says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AttentionWords {
    /// Who asks and for what: `Claude Code wants to run Bash`.
    pub headline: String,
    /// What will run or what is asked, on one line, cut at a word where it
    /// can be: `Bash touch made.txt`. Null when the tier hides it or the
    /// agent said nothing.
    pub what: Option<String>,
    /// Where: the session's title and its folder, `Fix the login test ·
    /// ~/src/app` (empty when neither is known).
    pub place: String,
    /// For a permission whose tool and command the machine did not send
    /// (tier 0): the sentence that says so and where to approve.
    pub hidden: Option<String>,
}

/// The words for `asked`, shown to a reader at `reader_tier` (a push device's
/// or the desktop's own choice; 3 when the reader takes what came).
pub fn words(asked: &Asked, reader_tier: u8) -> AttentionWords {
    let tier = asked.tier.min(reader_tier);
    let shown = |field: &str, v: Option<&str>| shown_at(field, v, tier);
    let (tool, message) = (shown("tool", asked.tool), shown("message", asked.message));
    let who = harness_display_name(asked.harness);
    let headline = match (asked.kind, &tool) {
        ("permission", Some(t)) => format!("{who} wants to run {t}"),
        ("permission", None) => format!("{who} needs your permission"),
        ("question", _) => format!("{who} has a question"),
        ("elicitation", _) => format!("{who} needs your input"),
        ("idle", _) => format!("{who} is waiting for you"),
        ("error", _) => format!("{who} stopped on an error"),
        _ => format!("{who} needs you"),
    };
    let what = what_runs(tool.as_deref(), message.as_deref()).map(|w| cut(&w, WHAT_MAX));
    // Only what the machine withheld is said so: a reader's own lower tier
    // (a device that chose 0) is its choice, not the machine's.
    let withheld = field_tier("attention.needed", "tool").is_some_and(|t| asked.tier < t);
    let hidden = (asked.kind == "permission" && withheld).then(|| HIDDEN_SENTENCE.to_string());
    AttentionWords {
        headline,
        what,
        place: place(asked.title, asked.cwd),
        hidden,
    }
}

fn shown_at(field: &str, v: Option<&str>, tier: u8) -> Option<String> {
    v.map(str::trim)
        .filter(|s| !s.is_empty())
        .filter(|_| field_tier("attention.needed", field).is_some_and(|t| t <= tier))
        .map(str::to_string)
}

/// The tool and the agent's message as one line, whole: Claude Code's message
/// already starts with the tool (`Bash rm -rf build`), others get
/// `tool: message`. `None` when neither says anything.
pub fn what_runs(tool: Option<&str>, message: Option<&str>) -> Option<String> {
    let tool = tool.map(str::trim).filter(|t| !t.is_empty());
    let message = message.map(str::trim).filter(|m| !m.is_empty());
    let text = match (tool, message) {
        (Some(t), Some(m)) if m.starts_with(t) => m.to_string(),
        (Some(t), Some(m)) => format!("{t}: {m}"),
        (Some(t), None) => t.to_string(),
        (None, Some(m)) => m.to_string(),
        (None, None) => return None,
    };
    Some(one_line(&text))
}

/// `Fix the login test · ~/src/app`: the title (cut) and the folder (cut
/// from its start), the folder once when the title is the folder.
pub fn place(title: Option<&str>, cwd: Option<&str>) -> String {
    let title = title.map(str::trim).filter(|t| !t.is_empty());
    let cwd = cwd.map(str::trim).filter(|c| !c.is_empty());
    let mut parts = Vec::new();
    if let Some(t) = title.filter(|t| Some(*t) != cwd) {
        parts.push(cut(t, TITLE_MAX));
    }
    if let Some(c) = cwd {
        parts.push(cut_left(c, FOLDER_MAX));
    }
    parts.join(" · ")
}

/// Whitespace runs (a multi-line command's newlines) as one space, trimmed.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` on one line, at most `max` characters with the `…` that marks a cut:
/// at the last space when one falls in the last third of what fits (a
/// command's word stays whole), else between two characters, never inside
/// one (the cut is on a char boundary, so never mid-UTF-8).
pub fn cut(s: &str, max: usize) -> String {
    let one = one_line(s);
    if one.chars().count() <= max {
        return one;
    }
    let keep = max.saturating_sub(1);
    let end = one.char_indices().nth(keep).map_or(one.len(), |(i, _)| i);
    let head = &one[..end];
    let at = match head.rfind(' ') {
        Some(i) if head[..i].chars().count() * 3 >= keep * 2 => i,
        _ => end,
    };
    format!("{}…", head[..at].trim_end())
}

/// `s` cut from its start to at most `max` characters: `…` then its end.
pub fn cut_left(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let skip = n - max.saturating_sub(1);
    let start = s.char_indices().nth(skip).map_or(s.len(), |(i, _)| i);
    format!("…{}", &s[start..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn perm(tier: u8) -> Value {
        json!({
            "tier": tier,
            "harness": {"name": "claude-code"},
            "session": {"id": "s1", "title": "Fix the login test", "cwd": "~/src/app"},
            "data": {"attention_id": "p1", "kind": "permission", "tool": "Bash",
                     "message": "Bash touch made.txt"},
        })
    }

    #[test]
    fn a_permission_at_tier_1_names_the_tool_the_command_and_where() {
        let e = perm(1);
        let w = words(&Asked::of_json(&e), 3);
        assert_eq!(w.headline, "Claude Code wants to run Bash");
        assert_eq!(w.what.as_deref(), Some("Bash touch made.txt"));
        assert_eq!(w.place, "Fix the login test · ~/src/app");
        assert_eq!(w.hidden, None);
    }

    #[test]
    fn at_tier_0_the_machine_hid_it_and_the_words_say_so() {
        // What a tier-0 sink sends: no tool, no message.
        let mut e = perm(0);
        e["data"] = json!({"attention_id": "p1", "kind": "permission"});
        let w = words(&Asked::of_json(&e), 3);
        assert_eq!(w.headline, "Claude Code needs your permission");
        assert_eq!(w.what, None);
        assert_eq!(w.hidden.as_deref(), Some(HIDDEN_SENTENCE));
        // Even were a field there, tier 0 never shows it.
        let w = words(&Asked::of_json(&perm(0)), 3);
        assert_eq!(
            (w.what, w.headline.as_str()),
            (None, "Claude Code needs your permission")
        );
    }

    #[test]
    fn a_readers_own_lower_tier_hides_without_blaming_the_machine() {
        let w = words(&Asked::of_json(&perm(3)), 0);
        assert_eq!(w.headline, "Claude Code needs your permission");
        assert_eq!(w.what, None);
        assert_eq!(
            w.hidden, None,
            "the device chose tier 0, the machine hid nothing"
        );
    }

    #[test]
    fn every_kind_has_its_headline() {
        for (kind, said) in [
            ("question", "Codex has a question"),
            ("elicitation", "Codex needs your input"),
            ("idle", "Codex is waiting for you"),
            ("error", "Codex stopped on an error"),
            ("other", "Codex needs you"),
        ] {
            let a = Asked {
                harness: "codex",
                kind,
                tier: 3,
                ..Asked::default()
            };
            let w = words(&a, 3);
            assert_eq!(w.headline, said);
            assert_eq!((w.what, w.place.as_str(), w.hidden), (None, "", None));
        }
    }

    #[test]
    fn the_tool_and_message_make_one_line() {
        assert_eq!(
            what_runs(Some("Bash"), Some("Bash rm -rf x")).as_deref(),
            Some("Bash rm -rf x")
        );
        assert_eq!(
            what_runs(Some("Bash"), Some("cargo test &&\n  rm -rf target")).as_deref(),
            Some("Bash: cargo test && rm -rf target")
        );
        assert_eq!(what_runs(Some("Edit"), None).as_deref(), Some("Edit"));
        assert_eq!(what_runs(None, Some(" May I? ")).as_deref(), Some("May I?"));
        assert_eq!(what_runs(Some(""), Some("")), None);
    }

    #[test]
    fn a_long_command_is_cut_at_a_word_with_an_ellipsis() {
        let long = format!(
            "Bash cargo test --workspace {}",
            "--features alpha ".repeat(30)
        );
        let c = cut(&long, 60);
        assert!(c.chars().count() <= 60, "{c}");
        assert!(c.ends_with("alpha…") || c.ends_with("--features…"), "{c}");
        assert!(
            long.starts_with(c.trim_end_matches('…')),
            "a prefix of the command: {c}"
        );
        // Short enough: whole, on one line.
        assert_eq!(cut("Bash ls\n-la", 60), "Bash ls -la");
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        // One long word of multi-byte characters: cut between two of them.
        let s = format!("Bash echo {}", "é🦀".repeat(100));
        for max in [5, 20, 21, 50, 199] {
            let c = cut(&s, max);
            assert_eq!(c.chars().count(), max, "{max}: {c}");
            assert!(c.ends_with('…'));
            assert!(s.starts_with(c.trim_end_matches('…')), "{max}: {c}");
        }
        // Near the last space, the word before it stays whole instead.
        assert_eq!(cut(&s, 12), "Bash echo…");
        assert_eq!(cut("abc", 0), "…");
        let folder = format!("~/{}/project", "δ".repeat(80));
        let left = cut_left(&folder, 20);
        assert_eq!(left.chars().count(), 20);
        assert!(
            left.starts_with('…') && left.ends_with("δδ/project"),
            "{left}"
        );
    }

    #[test]
    fn the_place_says_the_folder_once_and_cuts_both() {
        assert_eq!(place(Some("~/src/api"), Some("~/src/api")), "~/src/api");
        assert_eq!(place(None, Some("~/w")), "~/w");
        assert_eq!(place(Some("T"), None), "T");
        assert_eq!(place(None, None), "");
        let p = place(
            Some(&"T".repeat(100)),
            Some(&format!("~/{}/deep/app", "d".repeat(100))),
        );
        let (t, f) = p.split_once(" · ").unwrap();
        assert_eq!(t.chars().count(), TITLE_MAX);
        assert!(f.starts_with('…') && f.ends_with("/deep/app") && f.chars().count() == FOLDER_MAX);
    }

    #[test]
    fn the_typed_envelope_reads_as_the_json_one() {
        let e = perm(1);
        let env: Envelope = serde_json::from_value(json!({
            "protocol": 1, "id": "01J00000000000000000000000", "type": "attention.needed",
            "time": "2026-01-01T00:00:00.000Z", "tier": 1, "harness": e["harness"],
            "session": {"id": "s1", "seq": 1, "title": "Fix the login test", "cwd": "~/src/app"},
            "privacy": {"rulesets": ["secrets@1"], "pii": false}, "data": e["data"],
        }))
        .unwrap();
        assert_eq!(
            words(&Asked::of_envelope(&env), 3),
            words(&Asked::of_json(&e), 3)
        );
    }

    #[test]
    fn the_pairing_sentences() {
        assert_eq!(tier_sentence(0), HIDDEN_SENTENCE);
        assert_eq!(tier_sentence(PAIRING_TIER), TIER_1_SENTENCE);
        assert_eq!(tier_sentence(3), TIER_1_SENTENCE);
    }
}
