//! Payloads: the compact field list an action carries ([`Fields`]), and the
//! checked view the actions decode it through (`Payload`: onlyKeys first,
//! then fields in payload order).
//!
//! An action's payload is small (one to nine keys) and read once, so it is
//! kept as one sorted vector of (key, value) pairs whose short strings (keys,
//! entity ids) live inline: reading a payload touches one allocation, not a
//! map node plus one allocation per key and per string value.

use serde_json::{Map, Value as Json};

use crate::reject::{reject, RejectCode, Rejection};
use crate::transform::Transform;

/// A string stored inline when it is at most 23 bytes long (ids, payload
/// keys), else shared on the heap.
pub type ShortStr = smol_str::SmolStr;

/// A [`ShortStr`] built without `SmolStr::new`'s scan for whitespace-only
/// strings (it shares those; payload strings are ids and keys).
pub(crate) fn short(s: &str) -> ShortStr {
    if s.len() <= 23 {
        ShortStr::new_inline(s)
    } else {
        ShortStr::new(s)
    }
}

/// One payload value. Scalars are stored as the kernel reads them (numbers
/// as `f64`, the way every numeric field is validated); arrays and objects
/// stay JSON.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number (a JSON number read as `f64`; may be non-finite when built
    /// directly, and is then rejected as `not_finite` like any number field).
    Num(f64),
    /// A string.
    Str(ShortStr),
    /// An array or an object.
    Json(Box<Json>),
    /// A transform given as one (a room's own candidate move), not as
    /// JSON: read as the same JSON would be (`to_json`), without building
    /// and parsing it.
    Transform(Box<Transform>),
}

impl FieldValue {
    /// The value read as a transform, as its JSON reads
    /// ([`Transform::from_json`]). A transform given as one is only
    /// canonicalized: its JSON would only turn -0 into 0, which
    /// canonicalizing does anyway — unless a part is not finite, and then
    /// the JSON path says so, as for any value.
    ///
    /// # Errors
    /// What is wrong with it as a transform.
    pub fn read_transform(&self) -> Result<Transform, String> {
        match self {
            FieldValue::Transform(t) if t.is_finite() => t.canonicalize(),
            FieldValue::Json(j) => Transform::from_json(j),
            other => Transform::from_json(&other.to_json()),
        }
    }

    /// The value as JSON (integral numbers within ±2^53 as integers).
    pub fn to_json(&self) -> Json {
        match self {
            FieldValue::Null => Json::Null,
            FieldValue::Bool(b) => Json::Bool(*b),
            FieldValue::Num(n) => num_json(*n),
            FieldValue::Str(s) => Json::String(s.as_str().to_owned()),
            FieldValue::Json(j) => (**j).clone(),
            FieldValue::Transform(t) => t.to_value().to_json(),
        }
    }

    fn from_json(v: Json) -> FieldValue {
        match v {
            Json::Null => FieldValue::Null,
            Json::Bool(b) => FieldValue::Bool(b),
            Json::Number(n) => match n.as_f64() {
                Some(f) => FieldValue::Num(f),
                None => FieldValue::Json(Box::new(Json::Number(n))),
            },
            Json::String(s) => FieldValue::Str(short(s.as_str())),
            other => FieldValue::Json(Box::new(other)),
        }
    }
}

fn num_json(n: f64) -> Json {
    let integral =
        n.fract() == 0.0 && n.abs() <= MAX_SAFE_INTEGER && !(n == 0.0 && n.is_sign_negative());
    if integral {
        Json::from(crate::num::safe_int_to_i64(n))
    } else {
        serde_json::Number::from_f64(n).map_or(Json::Null, Json::Number)
    }
}

impl From<Json> for FieldValue {
    fn from(v: Json) -> FieldValue {
        FieldValue::from_json(v)
    }
}

impl From<Transform> for FieldValue {
    fn from(t: Transform) -> FieldValue {
        FieldValue::Transform(Box::new(t))
    }
}

impl From<&str> for FieldValue {
    fn from(s: &str) -> FieldValue {
        FieldValue::Str(short(s))
    }
}

impl From<f64> for FieldValue {
    fn from(n: f64) -> FieldValue {
        FieldValue::Num(n)
    }
}

impl From<bool> for FieldValue {
    fn from(b: bool) -> FieldValue {
        FieldValue::Bool(b)
    }
}

impl From<Option<&str>> for FieldValue {
    fn from(s: Option<&str>) -> FieldValue {
        s.map_or(FieldValue::Null, FieldValue::from)
    }
}

/// An action's payload: (key, value) pairs sorted by key, keys unique —
/// the same order a JSON object read into a sorted map has.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fields(Vec<(ShortStr, FieldValue)>);

impl Fields {
    /// An empty payload.
    pub fn new() -> Fields {
        Fields(Vec::new())
    }

    /// Sets `key` (replacing an earlier value).
    pub fn set(&mut self, key: &str, value: impl Into<FieldValue>) {
        let value = value.into();
        match self.0.binary_search_by(|(k, _)| k.as_str().cmp(key)) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (short(key), value)),
        }
    }

    /// Builder form of [`Fields::set`].
    pub fn with(mut self, key: &str, value: impl Into<FieldValue>) -> Fields {
        self.set(key, value);
        self
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&FieldValue> {
        self.0
            .iter()
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v)
    }

    /// Keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    /// (key, value) pairs in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &FieldValue)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The payload as a JSON object.
    pub fn to_json(&self) -> Json {
        Json::Object(
            self.0
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), v.to_json()))
                .collect(),
        )
    }
}

impl From<Map<String, Json>> for Fields {
    fn from(map: Map<String, Json>) -> Fields {
        let mut out: Vec<(ShortStr, FieldValue)> = map
            .into_iter()
            .map(|(k, v)| (short(k.as_str()), FieldValue::from_json(v)))
            .collect();
        out.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        Fields(out)
    }
}

impl Fields {
    /// A payload from (key, value) pairs in any order, sorted once; `None`
    /// when a key comes twice.
    pub(crate) fn from_pairs(mut pairs: Vec<(ShortStr, FieldValue)>) -> Option<Fields> {
        pairs.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        if pairs.windows(2).any(|w| w[0].0 == w[1].0) {
            return None;
        }
        Some(Fields(pairs))
    }
}

/// A payload whose keys have been checked against the action's schema.
pub(crate) struct Payload<'a> {
    fields: &'a Fields,
}

impl<'a> Payload<'a> {
    /// Checks onlyKeys: every key must be one of `allowed`.
    pub(crate) fn new(fields: &'a Fields, allowed: &[&str]) -> Result<Self, Rejection> {
        if let Some(k) = fields.keys().find(|k| !allowed.contains(k)) {
            let expected = if allowed.is_empty() {
                "no keys".to_owned()
            } else {
                allowed.join(", ")
            };
            return reject(
                RejectCode::UnknownKey,
                format!("unknown payload key \"{k}\" (expected {expected})"),
            );
        }
        Ok(Payload { fields })
    }

    fn required(&self, key: &str) -> Result<&'a FieldValue, Rejection> {
        match self.fields.get(key) {
            Some(v) => Ok(v),
            None => reject(
                RejectCode::MissingField,
                format!("payload.{key} is required"),
            ),
        }
    }

    /// Whether the payload has `key`.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.fields.get(key).is_some()
    }

    /// The value of an optional key as JSON (copied: for rarely used
    /// fields).
    pub(crate) fn opt(&self, key: &str) -> Option<Json> {
        self.fields.get(key).map(FieldValue::to_json)
    }

    /// A required string.
    pub(crate) fn str(&self, key: &str) -> Result<&'a str, Rejection> {
        match self.required(key)? {
            FieldValue::Str(s) => Ok(s.as_str()),
            other => reject(
                RejectCode::InvalidType,
                format!("payload.{key} must be a string, not {}", field_type(other)),
            ),
        }
    }

    /// A required non-empty string id.
    pub(crate) fn id(&self, key: &str) -> Result<&'a str, Rejection> {
        let s = self.str(key)?;
        if s.is_empty() {
            return reject(
                RejectCode::InvalidValue,
                format!("payload.{key} must not be empty"),
            );
        }
        Ok(s)
    }

    /// A required finite number.
    pub(crate) fn num(&self, key: &str) -> Result<f64, Rejection> {
        match self.required(key)? {
            FieldValue::Num(f) if f.is_finite() => Ok(*f),
            FieldValue::Num(_) => reject(
                RejectCode::NotFinite,
                format!("payload.{key} must be finite"),
            ),
            other => reject(
                RejectCode::InvalidType,
                format!("payload.{key} must be a number, not {}", field_type(other)),
            ),
        }
    }

    /// A required positive safe integer (1 ..= 2^53 - 1).
    pub(crate) fn positive_int(&self, key: &str) -> Result<u64, Rejection> {
        let n = self.num(key)?;
        if n < 1.0 || n.fract() != 0.0 || n > MAX_SAFE_INTEGER {
            return reject(
                RejectCode::InvalidValue,
                format!("payload.{key} must be a positive safe integer, got {n}"),
            );
        }
        Ok(crate::num::safe_int_to_u64(n))
    }

    /// A required non-negative safe integer (0 ..= 2^53 - 1).
    pub(crate) fn index(&self, key: &str) -> Result<u64, Rejection> {
        safe_index(key, self.num(key)?)
    }

    /// A required field that is a string or `null`.
    pub(crate) fn str_or_null(&self, key: &str) -> Result<Option<&'a str>, Rejection> {
        match self.required(key)? {
            FieldValue::Null => Ok(None),
            FieldValue::Str(s) => Ok(Some(s.as_str())),
            other => reject(
                RejectCode::InvalidType,
                format!(
                    "payload.{key} must be a string or null, not {}",
                    field_type(other)
                ),
            ),
        }
    }

    /// A required array of strings.
    pub(crate) fn str_list(&self, key: &str) -> Result<Vec<&'a str>, Rejection> {
        let FieldValue::Json(json) = self.required(key)? else {
            return reject(
                RejectCode::InvalidType,
                format!("payload.{key} must be an array of ids"),
            );
        };
        let Json::Array(list) = &**json else {
            return reject(
                RejectCode::InvalidType,
                format!("payload.{key} must be an array of ids"),
            );
        };
        list.iter()
            .map(|v| match v {
                Json::String(s) => Ok(s.as_str()),
                other => reject(
                    RejectCode::InvalidType,
                    format!("payload.{key} must hold strings, not {}", json_type(other)),
                ),
            })
            .collect()
    }

    /// A required canonical transform (validated, normalized, quantized).
    pub(crate) fn transform(&self, key: &str) -> Result<Transform, Rejection> {
        self.required(key)?
            .read_transform()
            .map_err(|m| Rejection::new(RejectCode::InvalidValue, format!("payload.{key}: {m}")))
    }

    /// A required boolean.
    pub(crate) fn bool(&self, key: &str) -> Result<bool, Rejection> {
        match self.required(key)? {
            FieldValue::Bool(b) => Ok(*b),
            other => reject(
                RejectCode::InvalidType,
                format!(
                    "payload.{key} must be true or false, not {}",
                    field_type(other)
                ),
            ),
        }
    }
}

/// `payload.{key}` = `n` as a non-negative safe integer (0 ..= 2^53 - 1).
pub(crate) fn safe_index(key: &str, n: f64) -> Result<u64, Rejection> {
    if n < 0.0 || n.fract() != 0.0 || n > MAX_SAFE_INTEGER {
        return reject(
            RejectCode::InvalidValue,
            format!("payload.{key} must be a non-negative safe integer, got {n}"),
        );
    }
    Ok(crate::num::safe_int_to_u64(n))
}

/// 2^53 - 1, the largest integer every JSON reader represents exactly.
pub const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The JSON type name of a value, for messages.
pub(crate) fn json_type(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// The JSON type name of a payload value, for messages.
fn field_type(v: &FieldValue) -> &'static str {
    match v {
        FieldValue::Null => "null",
        FieldValue::Bool(_) => "a boolean",
        FieldValue::Num(_) => "a number",
        FieldValue::Str(_) => "a string",
        FieldValue::Json(j) => json_type(j),
        FieldValue::Transform(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transform::{Quat, Vec3};

    fn transform(p: [f64; 3], r: [f64; 4], s: [f64; 3]) -> Transform {
        Transform {
            position: Vec3 {
                x: p[0],
                y: p[1],
                z: p[2],
            },
            rotation: Quat {
                x: r[0],
                y: r[1],
                z: r[2],
                w: r[3],
            },
            scale: Vec3 {
                x: s[0],
                y: s[1],
                z: s[2],
            },
        }
    }

    /// A transform given as one (`FieldValue::Transform`) reads exactly as
    /// its JSON form does: the same transform or the same refusal, and the
    /// same JSON written out — for canonical parts, negative zeros, parts
    /// off the quantization grid, a rotation a little off unit length, and
    /// parts out of bounds or not finite.
    #[test]
    fn a_transform_field_reads_as_its_json() {
        let cases = [
            transform([1.0, 0.0, 2.5], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0]),
            transform([-0.0, 3.0, -0.0], [-0.0, 0.0, -0.0, 1.0], [1.0, 2.0, 0.5]),
            transform(
                [1.234_56, -0.000_04, 7.0],
                [0.0, 0.0, 0.0, 1.000_5],
                [1.0, 1.0, 1.0],
            ),
            transform([2e6, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0]),
            transform([0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0], [1.0, 1.0, 1.0]),
            transform([0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0]),
            transform([f64::NAN, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0]),
            transform(
                [0.0, 0.0, 0.0],
                [0.0, f64::INFINITY, 0.0, 1.0],
                [1.0, 1.0, 1.0],
            ),
        ];
        for t in cases {
            let given = FieldValue::from(t);
            let as_json = FieldValue::from(given.to_json());
            assert!(matches!(as_json, FieldValue::Json(_)), "{t:?}");
            let read = |v: &FieldValue| {
                let mut fields = Fields::new();
                fields.set("transform", v.clone());
                let payload = Payload::new(&fields, &["transform"]).expect("allowed");
                format!("{:?}", payload.transform("transform"))
            };
            assert_eq!(read(&given), read(&as_json), "{t:?}");
            assert_eq!(given.to_json(), as_json.to_json(), "{t:?}");
            assert_eq!(field_type(&given), field_type(&as_json), "{t:?}");
            let line = |v: &FieldValue| {
                let mut fields = Fields::new();
                fields.set("entityId", "p1");
                fields.set("transform", v.clone());
                let action = crate::Action::with_fields(
                    crate::TypeName::new("entity.drop"),
                    crate::Source::System,
                    fields,
                );
                let mut out = String::new();
                action.write_json(&mut out);
                out
            };
            assert_eq!(line(&given), line(&as_json), "{t:?}");
        }
    }
}
