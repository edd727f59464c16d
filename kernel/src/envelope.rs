//! The fast way in: an action read straight from its JSON text into the
//! typed envelope — type and ids borrowed from the line, the payload into
//! [`Fields`] — with no `serde_json::Value` tree in between.
//!
//! It only ever answers for a well-formed envelope. Anything else (an
//! unknown key, a missing field, a wrong type, a duplicate key) gives
//! `None`, and the caller takes the general path
//! ([`Action::from_json`]), which names the problem exactly: one set of
//! rules, one set of messages. `kernel/tests/envelope.rs` checks the two
//! paths agree.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value as Json;

use crate::action::{Action, Source, TypeName};
use crate::payload::{short, FieldValue, Fields};
use crate::state::Id;
use crate::value::{write_number, write_string, write_u64};

/// A `T` read only from a JSON object: serde's derived structs would also
/// read an array, field by field, which the general path refuses.
struct MapOnly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MapOnly<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MapOnly<T>, D::Error> {
        struct Only<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Only<T> {
            type Value = MapOnly<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MapOnly<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(MapOnly)
            }
        }
        d.deserialize_map(Only(std::marker::PhantomData))
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(borrow)]
    source: MapOnly<RawSource<'a>>,
    payload: Fields,
    #[serde(rename = "actionId", default, borrow, deserialize_with = "present")]
    action_id: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "present")]
    at: Option<i64>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource<'a> {
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(rename = "playerId", default, borrow, deserialize_with = "present")]
    player_id: Option<Cow<'a, str>>,
    #[serde(rename = "scriptId", default, borrow, deserialize_with = "present")]
    script_id: Option<Cow<'a, str>>,
    #[serde(rename = "bindingId", default, borrow, deserialize_with = "present")]
    binding_id: Option<Cow<'a, str>>,
}

/// An optional key that, when present, must hold a `T` (not `null`, which
/// the general path refuses too).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl RawSource<'_> {
    /// The source, when its keys are exactly the ones its kind takes.
    fn source(self) -> Option<Source> {
        match (&*self.kind, self.player_id, self.script_id, self.binding_id) {
            ("player", Some(p), None, None) => Some(Source::Player {
                player_id: Id::from(&*p),
            }),
            ("system", None, None, None) => Some(Source::System),
            ("script", None, Some(s), Some(b)) => Some(Source::Script {
                script_id: Id::from(&*s),
                binding_id: Id::from(&*b),
            }),
            _ => None,
        }
    }
}

impl Action {
    /// The action in `text`, when `text` is a well-formed envelope; `None`
    /// sends the caller to [`Action::from_json`] for the exact rejection.
    pub fn from_json_str(text: &str) -> Option<Action> {
        let MapOnly(e): MapOnly<Envelope<'_>> = serde_json::from_str(text).ok()?;
        let action_id = match e.action_id {
            Some(id) if id.is_empty() => return None,
            Some(id) => Some(Id::from(&*id)),
            None => None,
        };
        if e.at.is_some_and(|at| at < 0) {
            return None;
        }
        Some(Action {
            action_type: TypeName::new(&e.ty),
            source: e.source.0.source()?,
            payload: e.payload,
            action_id,
            at: e.at,
        })
    }
}

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fields, D::Error> {
        d.deserialize_map(FieldsVisitor)
    }
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Fields;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a payload object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        // Gathered, then sorted once (a line may hold a million keys).
        let mut pairs = Vec::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let value: FieldValue = map.next_value_seed(FieldSeed)?;
            pairs.push((short(&key), value));
        }
        // A duplicate key: the general path decides what it means.
        Fields::from_pairs(pairs).ok_or_else(|| de::Error::custom("duplicate payload key"))
    }
}

/// One payload value, read as [`FieldValue`] reads it from JSON: numbers as
/// `f64`, strings inline when short, arrays and objects kept as JSON.
struct FieldSeed;

impl<'de> de::DeserializeSeed<'de> for FieldSeed {
    type Value = FieldValue;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<FieldValue, D::Error> {
        d.deserialize_any(FieldVisitor)
    }
}

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = FieldValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<FieldValue, E> {
        Ok(FieldValue::Null)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<FieldValue, E> {
        Ok(FieldValue::Bool(b))
    }

    // As `serde_json::Number::as_f64` converts a parsed integer.
    #[allow(clippy::cast_precision_loss)]
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<FieldValue, E> {
        Ok(FieldValue::Num(n as f64))
    }

    // As `serde_json::Number::as_f64` converts a parsed integer.
    #[allow(clippy::cast_precision_loss)]
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<FieldValue, E> {
        Ok(FieldValue::Num(n as f64))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<FieldValue, E> {
        Ok(FieldValue::Num(n))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<FieldValue, E> {
        Ok(FieldValue::Str(short(s)))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<FieldValue, A::Error> {
        let v = Json::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(FieldValue::Json(Box::new(v)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<FieldValue, A::Error> {
        let v = Json::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(FieldValue::Json(Box::new(v)))
    }
}

impl Action {
    /// Writes the envelope as one line of JSON that reads back as this same
    /// action (through either way in): keys in canonical order, numbers
    /// and strings in canonical form, nested arrays and objects as serde
    /// writes them (so a replay validates exactly what was given).
    pub fn write_json(&self, out: &mut String) {
        out.push('{');
        if let Some(id) = &self.action_id {
            out.push_str("\"actionId\":");
            write_string(id, out);
            out.push(',');
        }
        if let Some(at) = self.at {
            out.push_str("\"at\":");
            if at < 0 {
                out.push('-');
            }
            write_u64(at.unsigned_abs(), out);
            out.push(',');
        }
        out.push_str("\"payload\":{");
        for (i, (k, v)) in self.payload.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_string(k, out);
            out.push(':');
            match v {
                FieldValue::Null => out.push_str("null"),
                FieldValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                FieldValue::Num(n) if n.is_finite() => write_number(*n, out),
                FieldValue::Num(_) => out.push_str("null"),
                FieldValue::Str(s) => write_string(s, out),
                FieldValue::Json(j) => out.push_str(&j.to_string()),
                FieldValue::Transform(_) => out.push_str(&v.to_json().to_string()),
            }
        }
        out.push_str("},\"source\":{");
        match &self.source {
            Source::Player { player_id } => {
                out.push_str("\"kind\":\"player\",\"playerId\":");
                write_string(player_id, out);
            }
            Source::System => out.push_str("\"kind\":\"system\""),
            Source::Script {
                script_id,
                binding_id,
            } => {
                out.push_str("\"bindingId\":");
                write_string(binding_id, out);
                out.push_str(",\"kind\":\"script\",\"scriptId\":");
                write_string(script_id, out);
            }
        }
        out.push_str("},\"type\":");
        write_string(self.action_type.as_str(), out);
        out.push('}');
    }
}
