//! Walking JSON values: applies a string rule to every string inside a value.
//!
//! It owns the traversal (iterative, so a deeply nested value cannot overflow the
//! stack) and replaces a string only when the rule changed it. It must not touch
//! object keys, numbers or the shape of the value, nor know any rule.

use std::borrow::Cow;

use serde_json::Value;

/// Applies `f` to every string value inside `v`, in place. Object keys are left alone.
pub(crate) fn map_strings(v: &mut Value, f: &dyn Fn(&str) -> Cow<'_, str>) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                if let Cow::Owned(new) = f(s) {
                    *s = new;
                }
            }
            Value::Array(a) => stack.extend(a.iter_mut()),
            Value::Object(o) => stack.extend(o.values_mut()),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn upper(s: &str) -> Cow<'_, str> {
        if s.bytes().any(|c| c.is_ascii_lowercase()) {
            Cow::Owned(s.to_ascii_uppercase())
        } else {
            Cow::Borrowed(s)
        }
    }

    #[test]
    fn strings_change_keys_and_other_values_do_not() {
        let mut v = json!({"key": "a", "n": 1, "list": ["b", {"deep": "c"}, null, true]});
        map_strings(&mut v, &upper);
        assert_eq!(
            v,
            json!({"key": "A", "n": 1, "list": ["B", {"deep": "C"}, null, true]})
        );
        assert_eq!(v.as_object().unwrap().keys().next().unwrap(), "key");
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let mut v = Value::String("x".into());
        for _ in 0..100_000 {
            v = Value::Array(vec![v]);
        }
        map_strings(&mut v, &upper);
        let mut cur = &v;
        while let Value::Array(a) = cur {
            cur = &a[0];
        }
        assert_eq!(cur, "X");
        // Dropping a 100 000-deep value recurses in serde_json; unwind it by hand.
        let mut cur = v;
        while let Value::Array(mut a) = cur {
            cur = a.pop().unwrap_or(Value::Null);
        }
    }
}
