//! A deserializer over a parsed JSON value that reads it the way the
//! OpenAPI document (JSON Schema) describes it, where serde alone is more
//! lenient:
//!
//! - a struct is read from a JSON object only (serde also takes an array of
//!   its fields in order, so `[null, null]` would pass for an object), and
//! - a number with a zero fraction that an `i64` holds exactly (`8.0`) is
//!   the integer it equals, as JSON Schema reads it (serde refuses it for
//!   integer fields).
//!
//! Everything else is what `serde_json::Value` does; errors are
//! `serde_json::Error`s, so the API's body extractor (`parse_json`)
//! classifies them as before. [`parse_value`] reads a part of a document
//! (a manifest object's `spec`) the same way, its errors keyed by path.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Unexpected, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::{Error, Number, Value};

/// The largest integer magnitude every `f64` up to it represents exactly.
const EXACT_F64_INTEGER: f64 = 9_007_199_254_740_992.0; // 2^53

/// Deserializes from a borrowed JSON value with the rules above.
#[derive(Debug, Clone, Copy)]
pub struct Strict<'a>(pub &'a Value);

fn visit_number<'de, V: Visitor<'de>>(n: &Number, visitor: V) -> Result<V::Value, Error> {
    if let Some(u) = n.as_u64() {
        visitor.visit_u64(u)
    } else if let Some(i) = n.as_i64() {
        visitor.visit_i64(i)
    } else {
        let f = n.as_f64().unwrap_or(f64::NAN);
        if f.fract() == 0.0 && f.abs() <= EXACT_F64_INTEGER {
            #[expect(clippy::cast_possible_truncation, reason = "integral and within 2^53: the cast is exact")]
            let integer = f as i64;
            visitor.visit_i64(integer)
        } else {
            visitor.visit_f64(f)
        }
    }
}

impl<'de> de::Deserializer<'de> for Strict<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => visit_number(n, visitor),
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visitor.visit_seq(Seq(items.iter())),
            Value::Object(map) => visitor.visit_map(Entries { iter: map.iter(), value: None }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::Object(map) => visitor.visit_map(Entries { iter: map.iter(), value: None }),
            Value::Array(_) => Err(de::Error::invalid_type(Unexpected::Seq, &visitor)),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // No request enum carries structs today; serde_json's own reading
        // of an enum is kept.
        de::Deserializer::deserialize_enum(self.0.clone(), name, variants, visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier
    }
}

struct Seq<'a>(std::slice::Iter<'a, Value>);

impl<'de> SeqAccess<'de> for Seq<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        self.0.next().map(|value| seed.deserialize(Strict(value))).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Entries<'a> {
    iter: serde_json::map::Iter<'a>,
    value: Option<&'a Value>,
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        match self.iter.next() {
            Some((key, value)) => {
                self.value = Some(value);
                seed.deserialize(de::value::BorrowedStrDeserializer::<Error>::new(key)).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self.value.take().ok_or_else(|| de::Error::custom("a map value was asked for before its key"))?;
        seed.deserialize(Strict(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// `json` read as `T` the way a request body is, its field errors keyed
/// under `prefix` (`objects[2].spec.host`): server-side apply reads each
/// manifest object's `spec` with the create body's type.
pub fn parse_value<T: serde::de::DeserializeOwned>(json: &Value, prefix: &str) -> Result<T, crate::FieldErrors> {
    serde_path_to_error::deserialize(Strict(json)).map_err(|error| {
        let path = error.path().to_string();
        let field = if path.is_empty() || path == "." { prefix.to_owned() } else { format!("{prefix}.{path}") };
        let mut details = crate::FieldErrors::new();
        details.insert(field, vec![strip_position(&error.into_inner().to_string())]);
        details
    })
}

/// serde_json appends "at line 1 column 42"; the field path says more.
pub fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// For `#[serde(default, deserialize_with = "play_model::json::present")]`:
/// distinguishes an absent field (`None`) from an explicit `null`
/// (`Some(None)`).
pub fn present<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        inner: Option<Inner>,
        #[serde(default)]
        list: Vec<Inner>,
        #[serde(default)]
        map: BTreeMap<String, i64>,
        any: Option<Value>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        n: i64,
        s: Option<String>,
    }

    fn read<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, Error> {
        T::deserialize(Strict(value))
    }

    #[test]
    fn reads_what_serde_json_reads() {
        let value = json!({"inner": {"n": -3, "s": "x"}, "list": [{"n": 1, "s": null}], "map": {"a": 7},
            "any": {"k": [1, 2.5, "v", null, true]}});
        let strict: Outer = read(&value).unwrap();
        let plain: Outer = serde_json::from_value(value).unwrap();
        assert_eq!(strict, plain);
    }

    #[test]
    fn structs_are_objects_only() {
        assert!(read::<Outer>(&json!([null, [], {}, null])).is_err());
        assert!(read::<Outer>(&json!({"inner": [4, null]})).is_err());
        assert!(read::<Outer>(&json!({"list": [[4, null]]})).is_err());
        assert!(serde_json::from_value::<Outer>(json!({"inner": [4, null]})).is_ok(), "serde's leniency");
    }

    #[test]
    fn integral_floats_are_integers() {
        let outer: Outer = read(&json!({"inner": {"n": 8.0}, "map": {"a": -2.0}})).unwrap();
        assert_eq!(outer.inner.unwrap().n, 8);
        assert_eq!(outer.map["a"], -2);
        assert!(read::<Outer>(&json!({"inner": {"n": 8.5}})).is_err());
        assert!(read::<Outer>(&json!({"inner": {"n": 1e300}})).is_err());
    }

    #[test]
    fn unknown_fields_are_still_refused() {
        let error = read::<Outer>(&json!({"x": 1})).unwrap_err();
        assert!(error.to_string().contains("unknown field `x`"), "{error}");
    }
}
