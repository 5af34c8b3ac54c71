//! The documents the property tests feed the JSON editor: a tree written out
//! with any style, which (unlike a `Value`) can hold a key twice, and what the
//! tree says the editor must refuse.

use super::model::{FORMAT, HARNESS, bin, with_ours};
use crate::install::hooks_json::{command, group};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// A JSON document as written, which (unlike a `Value`) can hold a key twice.
#[derive(Clone, Debug)]
pub enum J {
    /// A scalar's text (`null`, `-1.5e3`, `"a\"b"`).
    Scalar(String),
    Arr(Vec<J>, Look),
    Obj(Vec<(Key, J)>, Look),
}

#[derive(Clone, Debug)]
pub struct Key {
    name: String,
    /// Written with its first character as `\uXXXX`.
    escaped: bool,
}

/// How one container is written.
#[derive(Clone, Copy, Debug)]
pub struct Look {
    multiline: bool,
    /// Blanks inside an empty container, or padding inside a one-line one.
    pad: usize,
}

/// How the whole document is written.
#[derive(Clone, Debug)]
pub struct Style {
    indent: &'static str,
    newline: &'static str,
    colon: &'static str,
    comma: &'static str,
    bom: bool,
    final_newline: bool,
}

/// What is done to a document to make it something the editor must refuse,
/// or must not be fooled by.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Twist {
    None,
    Comment,
    TrailingComma,
    /// A key written twice under `"hooks"` (or `"hooks"` itself twice).
    DoubledOurs,
    /// A key written twice where we never read (another root key, or deep in one).
    DoubledTheirs,
}

fn look() -> impl Strategy<Value = Look> {
    (prop::bool::weighted(0.6), 0usize..3).prop_map(|(multiline, pad)| Look { multiline, pad })
}

fn key_name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec!["model", "env", "permissions", "statusLine", "a", "hooks"])
            .prop_map(str::to_string),
        1 => "[a-z]{1,8}",
        1 => prop::sample::select(vec!["ünï", "a\"b", "tab\t", "back\\slash", "é/ü"])
            .prop_map(str::to_string),
    ]
}

fn key() -> impl Strategy<Value = Key> {
    (key_name(), prop::bool::weighted(0.15)).prop_map(|(name, escaped)| Key { name, escaped })
}

fn scalar() -> impl Strategy<Value = J> {
    prop_oneof![
        Just("null".to_string()),
        Just("true".to_string()),
        Just("false".to_string()),
        (-1000i64..1000).prop_map(|n| n.to_string()),
        Just("-1.5e3".to_string()),
        Just("0.25".to_string()),
        "[ -~]{0,12}".prop_map(|s| Value::String(s).to_string()),
        Just("\"\\u00e9\\n\\\"q\\\"\"".to_string()),
    ]
    .prop_map(J::Scalar)
}

/// Objects keep each key once here; doubling is a `Twist`.
fn unique(members: Vec<(Key, J)>) -> Vec<(Key, J)> {
    let mut seen = std::collections::HashSet::new();
    members
        .into_iter()
        .filter(|(k, _)| seen.insert(k.name.clone()))
        .collect()
}

fn any_value() -> impl Strategy<Value = J> {
    scalar().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (prop::collection::vec(inner.clone(), 0..4), look()).prop_map(|(v, l)| J::Arr(v, l)),
            (prop::collection::vec((key(), inner), 0..4), look())
                .prop_map(|(m, l)| J::Obj(unique(m), l)),
        ]
    })
}

/// A `Value` as a document, each container written its own way.
fn from_value(v: &Value) -> BoxedStrategy<J> {
    match v {
        Value::Array(a) => {
            let items: Vec<BoxedStrategy<J>> = a.iter().map(from_value).collect();
            (items, look()).prop_map(|(v, l)| J::Arr(v, l)).boxed()
        }
        Value::Object(m) => {
            let items: Vec<BoxedStrategy<(Key, J)>> = m
                .iter()
                .map(|(k, v)| {
                    let name = k.clone();
                    (prop::bool::weighted(0.1), from_value(v))
                        .prop_map(move |(escaped, j)| {
                            (
                                Key {
                                    name: name.clone(),
                                    escaped,
                                },
                                j,
                            )
                        })
                        .boxed()
                })
                .collect();
            (items, look()).prop_map(|(v, l)| J::Obj(v, l)).boxed()
        }
        other => Just(J::Scalar(other.to_string())).boxed(),
    }
}

/// A handler's command: someone else's, one that only looks like ours, ours.
fn a_command() -> impl Strategy<Value = String> {
    let event = prop::sample::select(vec!["Stop", "PreToolUse", "Notification", "Other"]);
    prop_oneof![
        Just("notify-send done".to_string()),
        Just("echo sessionpipe-hook claude-code".to_string()),
        event.clone().prop_map(|e| command(bin(), HARNESS, e)),
        event.prop_map(|e| format!("/old/sessionpipe-hook {HARNESS} {e}")),
        Just(command(bin(), "codex", "Stop")),
    ]
}

fn handler() -> impl Strategy<Value = Value> {
    (a_command(), prop::option::of(1u64..60)).prop_map(|(c, t)| {
        let mut h = json!({"type": "command", "command": c});
        if let Some(t) = t {
            h["timeout"] = json!(t);
        }
        h
    })
}

/// A group: someone's, exactly the one we write for an event, or odd ones.
fn a_group() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (prop::option::of("[a-z]{0,4}"), prop::collection::vec(handler(), 0..3)).prop_map(
            |(matcher, handlers)| {
                let mut g = Map::new();
                if let Some(m) = matcher {
                    g.insert("matcher".into(), json!(m));
                }
                g.insert("hooks".into(), Value::Array(handlers));
                Value::Object(g)
            }
        ),
        2 => (0..FORMAT.layout.events.len()).prop_map(|i| {
            let e = &FORMAT.layout.events[i];
            group(&FORMAT.layout, e, command(bin(), HARNESS, e.name))
        }),
        1 => Just(json!(7)),
        1 => Just(json!({"hooks": "not a list"})),
    ]
}

/// The value of `"hooks"`: mostly events of lists of groups; sometimes an event
/// that is no list, or `"hooks"` itself no object.
fn hooks_value() -> impl Strategy<Value = Value> {
    let event = prop::sample::select(vec!["Stop", "PreToolUse", "Notification", "SessionStart"]);
    let list = prop_oneof![
        8 => prop::collection::vec(a_group(), 0..3).prop_map(Value::Array),
        1 => Just(json!({})),
    ];
    let events = prop::collection::vec((event, list), 0..4).prop_map(|events| {
        Value::Object(
            events
                .into_iter()
                .map(|(e, l)| (e.to_string(), l))
                .collect(),
        )
    });
    prop_oneof![
        20 => events.clone(),
        // As an install leaves it: current (unless ours were there already).
        6 => events.prop_map(|v| {
            let lists = FORMAT.layout.events.iter().all(|e| v.get(e.name).is_none_or(Value::is_array));
            if lists { with_ours(&json!({"hooks": v}))["hooks"].clone() } else { v }
        }),
        1 => Just(json!([])),
        1 => Just(json!("on")),
    ]
}

/// A root object: the person's members, and `"hooks"` among them (most times).
fn root() -> impl Strategy<Value = J> {
    let hooks = (
        prop::bool::weighted(0.1),
        hooks_value().prop_flat_map(|v| from_value(&v)),
    )
        .prop_map(|(escaped, v)| {
            (
                Key {
                    name: "hooks".into(),
                    escaped,
                },
                v,
            )
        });
    let object = (
        prop::collection::vec((key(), any_value()), 0..5),
        prop::option::weighted(0.85, hooks),
        any::<prop::sample::Index>(),
        look(),
    )
        .prop_map(|(theirs, hooks, at, look)| {
            let mut members = unique(theirs);
            members.retain(|(k, _)| k.name != "hooks");
            if let Some(h) = hooks {
                members.insert(at.index(members.len() + 1), h);
            }
            J::Obj(members, look)
        });
    prop_oneof![
        30 => object,
        // A `"hooks"` of any value at all (often no object).
        2 => (prop::collection::vec((key(), any_value()), 0..5), look())
            .prop_map(|(m, l)| J::Obj(unique(m), l)),
        1 => any_value(),
    ]
}

fn style() -> impl Strategy<Value = Style> {
    (
        prop::sample::select(vec!["  ", "    ", "\t", " "]),
        prop::sample::select(vec!["\n", "\r\n"]),
        prop::sample::select(vec![": ", ":", " : "]),
        prop::sample::select(vec![", ", ","]),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.7),
    )
        .prop_map(
            |(indent, newline, colon, comma, bom, final_newline)| Style {
                indent,
                newline,
                colon,
                comma,
                bom,
                final_newline,
            },
        )
}

fn twist() -> impl Strategy<Value = Twist> {
    prop_oneof![
        12 => Just(Twist::None),
        1 => Just(Twist::Comment),
        1 => Just(Twist::TrailingComma),
        2 => Just(Twist::DoubledOurs),
        2 => Just(Twist::DoubledTheirs),
    ]
}

/// A document, written out: its tree after the twist, and its text.
#[derive(Debug)]
pub struct Case {
    pub tree: J,
    pub twist: Twist,
    pub text: String,
}

pub fn case() -> impl Strategy<Value = Case> {
    (
        root(),
        style(),
        twist(),
        any::<prop::sample::Index>(),
        prop::bool::weighted(0.03),
    )
        .prop_map(|(mut tree, style, twist, at, blank)| {
            if blank {
                let text = ["", " ", "\n", "\r\n  "][at.index(4)].to_string();
                return Case {
                    tree: J::Obj(
                        Vec::new(),
                        Look {
                            multiline: false,
                            pad: 0,
                        },
                    ),
                    twist: Twist::None,
                    text,
                };
            }
            // A scalar has no comma to trail.
            let twist = match (&tree, twist) {
                (J::Scalar(_), Twist::TrailingComma) => Twist::None,
                _ => twist,
            };
            apply(&mut tree, twist, at);
            let text = write(&tree, &style, twist);
            Case { tree, twist, text }
        })
}

/// Doubles a member for the `Doubled*` twists (the copy goes last, as a person
/// pasting a block at the end would have it).
fn apply(tree: &mut J, twist: Twist, at: prop::sample::Index) {
    let J::Obj(members, _) = tree else { return };
    match twist {
        Twist::DoubledOurs => {
            let hooks = members.iter_mut().find(|(k, _)| k.name == "hooks");
            match hooks {
                Some((_, J::Obj(events, _))) if !events.is_empty() => {
                    let copy = events[at.index(events.len())].clone();
                    events.push(copy);
                }
                Some((k, v)) => {
                    let copy = (k.clone(), v.clone());
                    members.push(copy);
                }
                None => {
                    let empty = || {
                        J::Obj(
                            Vec::new(),
                            Look {
                                multiline: false,
                                pad: 0,
                            },
                        )
                    };
                    members.push((key_named("hooks"), empty()));
                    members.push((key_named("hooks"), empty()));
                }
            }
        }
        Twist::DoubledTheirs => {
            let theirs: Vec<usize> = (0..members.len())
                .filter(|i| members[*i].0.name != "hooks")
                .collect();
            if theirs.is_empty() {
                members.push((key_named("model"), J::Scalar("1".into())));
                members.push((key_named("model"), J::Scalar("2".into())));
            } else {
                let copy = members[theirs[at.index(theirs.len())]].clone();
                members.push(copy);
            }
        }
        _ => {}
    }
}

fn key_named(name: &str) -> Key {
    Key {
        name: name.into(),
        escaped: false,
    }
}

fn write(tree: &J, style: &Style, twist: Twist) -> String {
    let mut out = String::new();
    if style.bom {
        out.push('\u{feff}');
    }
    if twist == Twist::Comment {
        out.push_str("// mine");
        out.push_str(style.newline);
    }
    write_into(&mut out, tree, style, 0, twist == Twist::TrailingComma);
    if style.final_newline {
        out.push_str(style.newline);
    }
    out
}

fn write_key(k: &Key) -> String {
    let plain = Value::String(k.name.clone()).to_string();
    match k.name.chars().next() {
        Some(c) if k.escaped && c.is_ascii_alphanumeric() => {
            format!("\"\\u{:04x}{}", c as u32, &plain[2..])
        }
        _ => plain,
    }
}

/// Writes `j` at nesting `level`; `trailing` puts a comma after the last item of
/// the outermost non-empty container.
fn write_into(out: &mut String, j: &J, style: &Style, level: usize, trailing: bool) {
    let (open, close, items, look): (char, char, Vec<String>, Look) = match j {
        J::Scalar(s) => {
            out.push_str(s);
            return;
        }
        J::Arr(v, l) => {
            let items = v
                .iter()
                .map(|x| {
                    let mut s = String::new();
                    write_into(&mut s, x, style, level + 1, false);
                    s
                })
                .collect();
            ('[', ']', items, *l)
        }
        J::Obj(m, l) => {
            let items = m
                .iter()
                .map(|(k, x)| {
                    let mut s = write_key(k);
                    s.push_str(style.colon);
                    write_into(&mut s, x, style, level + 1, false);
                    s
                })
                .collect();
            ('{', '}', items, *l)
        }
    };
    out.push(open);
    if items.is_empty() {
        out.push_str(&" ".repeat(look.pad));
        if trailing {
            out.push(',');
        }
        out.push(close);
        return;
    }
    let comma_end = if trailing { "," } else { "" };
    if look.multiline {
        let inner = style.indent.repeat(level + 1);
        for (i, item) in items.iter().enumerate() {
            out.push_str(style.newline);
            out.push_str(&inner);
            out.push_str(item);
            out.push_str(if i + 1 < items.len() { "," } else { comma_end });
        }
        out.push_str(style.newline);
        out.push_str(&style.indent.repeat(level));
    } else {
        let pad = " ".repeat(look.pad);
        out.push_str(&pad);
        out.push_str(&items.join(style.comma));
        out.push_str(comma_end);
        out.push_str(&pad);
    }
    out.push(close);
}

/// Why the editor must refuse the document, from its tree (not from the editor).
pub fn refusal(case: &Case) -> Option<&'static str> {
    if matches!(case.twist, Twist::Comment | Twist::TrailingComma) {
        return Some("not plain JSON");
    }
    if case.text.trim().is_empty() {
        return None;
    }
    let J::Obj(members, _) = &case.tree else {
        return Some("not an object");
    };
    let hooks: Vec<&J> = members
        .iter()
        .filter(|(k, _)| k.name == "hooks")
        .map(|(_, v)| v)
        .collect();
    if hooks.len() > 1 || hooks.iter().any(|h| doubled(h)) {
        return Some("duplicate key");
    }
    match hooks.first() {
        None => None,
        Some(J::Obj(events, _)) => events
            .iter()
            .any(|(k, v)| {
                FORMAT.layout.events.iter().any(|e| e.name == k.name) && !matches!(v, J::Arr(..))
            })
            .then_some("not a list"),
        Some(_) => Some("not an object"),
    }
}

pub fn doubled(j: &J) -> bool {
    match j {
        J::Scalar(_) => false,
        J::Arr(v, _) => v.iter().any(doubled),
        J::Obj(m, _) => {
            let mut seen = std::collections::HashSet::new();
            m.iter().any(|(k, _)| !seen.insert(&k.name)) || m.iter().any(|(_, v)| doubled(v))
        }
    }
}
