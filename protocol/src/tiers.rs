//! Which tier carries which type and field (PROTOCOL-NOTES §3–§4). The filter is an
//! allowlist built on this table: a field not named here is never passed on.

/// Every type this version emits, with the lowest tier that carries it.
pub const KNOWN_TYPES: &[(&str, u8)] = &[
    ("session.started", 0),
    ("session.heartbeat", 0),
    ("session.ended", 0),
    ("session.backfill", 0),
    ("session.forgotten", 0),
    ("turn.started", 0),
    ("turn.ended", 0),
    ("turn.transcript", 2),
    ("turn.progress", 2),
    ("tool.started", 1),
    ("tool.ended", 1),
    ("files.changed", 1),
    ("attention.needed", 0),
    ("attention.cleared", 0),
    ("subagent.started", 1),
    ("subagent.ended", 1),
    ("context.compacted", 1),
    ("limits.observed", 0),
    ("native", 3),
];

/// Per type, each data field and the lowest tier that carries it.
const FIELDS: &[(&str, &[(&str, u8)])] = &[
    ("session.started", &[("source", 0)]),
    ("session.heartbeat", &[]),
    ("session.ended", &[("reason", 0)]),
    (
        "session.backfill",
        &[("started_at", 0), ("last_at", 0), ("turns", 0)],
    ),
    ("session.forgotten", &[]),
    (
        "turn.started",
        &[
            ("turn_id", 0),
            ("prompt_chars", 1),
            ("submitted_by", 1),
            ("injected", 1),
        ],
    ),
    (
        "turn.ended",
        &[
            ("turn_id", 0),
            ("reason", 0),
            ("ms", 0),
            ("error", 1),
            ("background", 1),
        ],
    ),
    (
        "turn.transcript",
        &[("turn", 2), ("user", 2), ("assistant", 2), ("at", 2)],
    ),
    (
        "turn.progress",
        &[("turn_id", 2), ("user", 2), ("assistant", 2)],
    ),
    (
        "tool.started",
        &[
            ("tool", 1),
            ("call_id", 1),
            ("turn_id", 1),
            ("agent_id", 1),
            ("input", 3),
        ],
    ),
    (
        "tool.ended",
        &[
            ("tool", 1),
            ("call_id", 1),
            ("turn_id", 1),
            ("agent_id", 1),
            ("ms", 1),
            ("ok", 1),
            ("error", 1),
            ("input", 3),
            ("output", 3),
        ],
    ),
    ("files.changed", &[("paths", 1)]),
    (
        "attention.needed",
        &[
            ("attention_id", 0),
            ("kind", 0),
            ("tool", 1),
            ("message", 1),
            ("agent_id", 1),
        ],
    ),
    ("attention.cleared", &[("attention_id", 0), ("how", 0)]),
    ("subagent.started", &[("agent_id", 1), ("agent_type", 1)]),
    (
        "subagent.ended",
        &[("agent_id", 1), ("agent_type", 1), ("background", 1)],
    ),
    ("context.compacted", &[("trigger", 1)]),
    (
        "limits.observed",
        &[("account_id", 0), ("status", 0), ("windows", 0)],
    ),
];

/// The lowest tier that carries `kind`, or `None` for a type this version does not know.
pub fn type_tier(kind: &str) -> Option<u8> {
    KNOWN_TYPES
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, t)| *t)
}

/// The lowest tier that carries `field` of `kind`, or `None` when the field is not
/// named for the type (and so is never passed on).
pub fn field_tier(kind: &str, field: &str) -> Option<u8> {
    FIELDS
        .iter()
        .find(|(k, _)| *k == kind)
        .and_then(|(_, fields)| fields.iter().find(|(f, _)| *f == field))
        .map(|(_, t)| *t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_with_fields_is_known_and_no_field_is_below_its_type() {
        for (kind, fields) in FIELDS {
            let tt = type_tier(kind).unwrap_or_else(|| panic!("{kind} not in KNOWN_TYPES"));
            for (f, ft) in *fields {
                assert!(*ft >= tt, "{kind}.{f} below its type's tier");
            }
        }
        for (kind, _) in KNOWN_TYPES {
            assert!(
                *kind == "native" || FIELDS.iter().any(|(k, _)| k == kind),
                "{kind} has no field list"
            );
        }
    }

    #[test]
    fn lookups() {
        assert_eq!(type_tier("tool.started"), Some(1));
        assert_eq!(type_tier("nope.nope"), None);
        assert_eq!(field_tier("tool.ended", "output"), Some(3));
        assert_eq!(field_tier("tool.ended", "stdout"), None);
    }
}
