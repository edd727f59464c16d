//! Payload decoding: onlyKeys first, then fields in payload order.

use serde_json::{Map, Value as Json};

use crate::reject::{reject, RejectCode, Rejection};
use crate::transform::Transform;

/// A payload whose keys have been checked against the action's schema.
pub(crate) struct Payload<'a> {
    map: &'a Map<String, Json>,
}

impl<'a> Payload<'a> {
    /// Checks onlyKeys: every key must be one of `allowed`.
    pub(crate) fn new(map: &'a Map<String, Json>, allowed: &[&str]) -> Result<Self, Rejection> {
        if let Some(k) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
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
        Ok(Payload { map })
    }

    fn required(&self, key: &str) -> Result<&'a Json, Rejection> {
        match self.map.get(key) {
            Some(v) => Ok(v),
            None => reject(
                RejectCode::MissingField,
                format!("payload.{key} is required"),
            ),
        }
    }

    /// The raw value of an optional key.
    pub(crate) fn opt(&self, key: &str) -> Option<&'a Json> {
        self.map.get(key)
    }

    /// A required string.
    pub(crate) fn str(&self, key: &str) -> Result<&'a str, Rejection> {
        match self.required(key)? {
            Json::String(s) => Ok(s),
            other => reject(
                RejectCode::InvalidType,
                format!("payload.{key} must be a string, not {}", json_type(other)),
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
            Json::Number(n) => match n.as_f64() {
                Some(f) if f.is_finite() => Ok(f),
                _ => reject(
                    RejectCode::NotFinite,
                    format!("payload.{key} must be finite"),
                ),
            },
            other => reject(
                RejectCode::InvalidType,
                format!("payload.{key} must be a number, not {}", json_type(other)),
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
        Ok(n as u64)
    }

    /// A required non-negative safe integer (0 ..= 2^53 - 1).
    pub(crate) fn index(&self, key: &str) -> Result<u64, Rejection> {
        let n = self.num(key)?;
        if n < 0.0 || n.fract() != 0.0 || n > MAX_SAFE_INTEGER {
            return reject(
                RejectCode::InvalidValue,
                format!("payload.{key} must be a non-negative safe integer, got {n}"),
            );
        }
        Ok(n as u64)
    }

    /// A required field that is a string or `null`.
    pub(crate) fn str_or_null(&self, key: &str) -> Result<Option<&'a str>, Rejection> {
        match self.required(key)? {
            Json::Null => Ok(None),
            Json::String(s) => Ok(Some(s)),
            other => reject(
                RejectCode::InvalidType,
                format!(
                    "payload.{key} must be a string or null, not {}",
                    json_type(other)
                ),
            ),
        }
    }

    /// A required array of strings.
    pub(crate) fn str_list(&self, key: &str) -> Result<Vec<&'a str>, Rejection> {
        let Json::Array(list) = self.required(key)? else {
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
        Transform::from_json(self.required(key)?)
            .map_err(|m| Rejection::new(RejectCode::InvalidValue, format!("payload.{key}: {m}")))
    }

    /// A required boolean.
    pub(crate) fn bool(&self, key: &str) -> Result<bool, Rejection> {
        match self.required(key)? {
            Json::Bool(b) => Ok(*b),
            other => reject(
                RejectCode::InvalidType,
                format!(
                    "payload.{key} must be true or false, not {}",
                    json_type(other)
                ),
            ),
        }
    }
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
