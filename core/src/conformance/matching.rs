//! Partial matching of JSON against an expectation: a key present in the
//! expectation must match, keys absent from it are not checked, `"*"` matches any
//! value. Arrays match element by element and must have the same length.

use super::check::Failed;
use serde_json::Value;

/// `Ok` when `actual` matches `expect`, else the JSON path of the first mismatch.
pub fn matches(expect: &Value, actual: &Value) -> Result<(), Failed> {
    walk(expect, actual, "")
}

fn walk(expect: &Value, actual: &Value, at: &str) -> Result<(), Failed> {
    match (expect, actual) {
        (Value::String(s), _) if s == "*" => Ok(()),
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                let path = format!("{at}/{k}");
                match a.get(k) {
                    Some(av) => walk(ev, av, &path)?,
                    None => return Err(Failed(format!("{path}: missing (expected {ev})"))),
                }
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Err(Failed(format!(
                    "{at}: {} items, expected {}",
                    a.len(),
                    e.len()
                )));
            }
            e.iter()
                .zip(a)
                .enumerate()
                .try_for_each(|(i, (ev, av))| walk(ev, av, &format!("{at}/{i}")))
        }
        (Value::Number(e), Value::Number(a)) if e.as_f64() == a.as_f64() => Ok(()),
        _ if expect == actual => Ok(()),
        _ => Err(Failed(format!(
            "{}: {actual}, expected {expect}",
            if at.is_empty() { "/" } else { at }
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::matches;
    use serde_json::json;

    #[test]
    fn partial_objects_wildcards_and_arrays() {
        let actual = json!({"a": 1, "b": {"c": [1, 2], "d": "x"}, "e": true});
        assert!(matches(&json!({"b": {"d": "*"}}), &actual).is_ok());
        assert!(matches(&json!({"b": {"c": [1, 2]}}), &actual).is_ok());
        assert!(matches(&json!({"a": 1.0}), &actual).is_ok());
        let err = matches(&json!({"b": {"c": [1]}}), &actual).unwrap_err();
        assert!(err.0.starts_with("/b/c"), "{err}");
        assert!(
            matches(&json!({"z": "*"}), &actual)
                .unwrap_err()
                .0
                .contains("missing")
        );
        assert!(matches(&json!({"e": false}), &actual).is_err());
    }
}
