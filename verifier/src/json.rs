//! Reading signed JSON (a command, a grant's `str`, a client data JSON) from its
//! exact bytes, refusing a key that appears twice in any object: the signer
//! and this verifier must never read two different values out of one string.
//! It builds a `serde_json::Value`; it never writes JSON back.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// Why signed bytes are not one JSON object.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JsonFault {
    /// Not JSON, or a key twice (serde_json's words).
    #[error("{0}")]
    Syntax(String),
    #[error("not an object")]
    NotAnObject,
}

/// The object `text` holds, every key once.
pub fn object(text: &str) -> Result<Map<String, Value>, JsonFault> {
    match serde_json::from_str::<Strict>(text) {
        Ok(Strict(Value::Object(map))) => Ok(map),
        Ok(_) => Err(JsonFault::NotAnObject),
        Err(e) => Err(JsonFault::Syntax(e.to_string())),
    }
}

/// A `Value` read with duplicate keys refused at every depth.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number JSON cannot hold"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom(format!("the key {key:?} twice")));
            }
            let Strict(v) = access.next_value()?;
            map.insert(key, v);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_object_in_its_order() {
        let m = object(r#"{"b":1,"a":[true,null,"x",-2,1.5,{"c":{}}]}"#).unwrap();
        assert_eq!(m.keys().collect::<Vec<_>>(), ["b", "a"]);
        assert_eq!(m["a"][4], 1.5);
    }

    #[test]
    fn refuses_a_key_twice_at_any_depth() {
        assert!(matches!(
            object(r#"{"text":"a","text":"b"}"#),
            Err(JsonFault::Syntax(_))
        ));
        assert!(matches!(
            object(r#"{"key":{"id":"a","id":"b"}}"#),
            Err(JsonFault::Syntax(_))
        ));
        assert!(matches!(
            object(r#"{"files":[{"n":1,"n":1}]}"#),
            Err(JsonFault::Syntax(_))
        ));
    }

    #[test]
    fn refuses_what_is_not_one_object() {
        assert_eq!(object("[1]"), Err(JsonFault::NotAnObject));
        assert_eq!(object("\"s\""), Err(JsonFault::NotAnObject));
        for bad in ["{v:1}", "{} {}", "", "{\"a\":\"\\ud800\"}", "{\"a\":1,}"] {
            assert!(matches!(object(bad), Err(JsonFault::Syntax(_))), "{bad}");
        }
    }
}
