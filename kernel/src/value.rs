//! Canonical values and their RFC 8785 (JCS) serialization.
//!
//! Every value that enters canonical state or an event is a [`Value`]: JSON
//! without non-finite numbers. [`Value::to_canonical_json`] writes the JCS
//! form: object keys sorted by UTF-16 code units, numbers in ECMAScript
//! `Number.prototype.toString` form (`3`, not `3.0`; `-0` written `0`), strings
//! escaped exactly as `JSON.stringify` does.

use std::cmp::Ordering;
use std::collections::BTreeMap;

/// A canonical JSON value. Numbers are always finite.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// JSON `null`.
    Null,
    /// JSON `true` / `false`.
    Bool(bool),
    /// A finite IEEE-754 double.
    Number(f64),
    /// A UTF-8 string.
    String(String),
    /// An ordered array.
    Array(Vec<Value>),
    /// An object; written with keys in UTF-16 order.
    Object(BTreeMap<String, Value>),
}

/// Why a JSON value is not canonical-compatible.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct NotCanonical {
    /// What was wrong, in words a creator can act on.
    pub message: String,
}

impl Value {
    /// Converts parsed JSON into a canonical value.
    ///
    /// # Errors
    /// A number that is not finite (serde_json never produces one, but values
    /// built by hand can) is refused.
    pub fn from_json(v: &serde_json::Value) -> Result<Value, NotCanonical> {
        Ok(match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Number(finite(n.as_f64())?),
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(a) => {
                Value::Array(a.iter().map(Value::from_json).collect::<Result<_, _>>()?)
            }
            serde_json::Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| Ok((k.clone(), Value::from_json(v)?)))
                    .collect::<Result<_, NotCanonical>>()?,
            ),
        })
    }

    /// The value as JSON (integral numbers within ±2^53 as integers, `-0`
    /// as `0`).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Number(n) => {
                let integral = n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0;
                if integral {
                    J::from(crate::num::safe_int_to_i64(*n))
                } else {
                    serde_json::Number::from_f64(*n).map_or(J::Null, J::Number)
                }
            }
            Value::String(s) => J::String(s.clone()),
            Value::Array(a) => J::Array(a.iter().map(Value::to_json).collect()),
            Value::Object(o) => {
                J::Object(o.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }

    /// The canonical JSON text (RFC 8785).
    pub fn to_canonical_json(&self) -> String {
        let mut out = String::new();
        self.write_canonical(&mut out);
        out
    }

    /// Appends the canonical serialization to `out`.
    pub fn write_canonical(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(true) => out.push_str("true"),
            Value::Bool(false) => out.push_str("false"),
            Value::Number(n) => write_number(*n, out),
            Value::String(s) => write_string(s, out),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write_canonical(out);
                }
                out.push(']');
            }
            Value::Object(map) => write_object(map, out),
        }
    }

    /// A short name of the value's JSON type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}

impl From<f64> for Value {
    fn from(n: f64) -> Self {
        Value::Number(n)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

fn finite(n: Option<f64>) -> Result<f64, NotCanonical> {
    match n {
        Some(n) if n.is_finite() => Ok(n),
        _ => Err(NotCanonical {
            message: "numbers must be finite".into(),
        }),
    }
}

/// Writes an object with keys in UTF-16 code-unit order (RFC 8785 §3.2.3).
///
/// `BTreeMap` orders by UTF-8 bytes, which agrees with UTF-16 order except
/// between U+E000..U+FFFF and supplementary characters; only keys holding such
/// characters pay for a re-sort.
pub(crate) fn write_object(map: &BTreeMap<String, Value>, out: &mut String) {
    out.push('{');
    let needs_resort = map.keys().any(|k| k.chars().any(|c| c >= '\u{E000}'));
    let mut first = true;
    let mut emit = |k: &str, v: &Value, out: &mut String| {
        if !first {
            out.push(',');
        }
        first = false;
        write_string(k, out);
        out.push(':');
        v.write_canonical(out);
    };
    if needs_resort {
        let mut entries: Vec<(&String, &Value)> = map.iter().collect();
        entries.sort_by(|a, b| utf16_cmp(a.0, b.0));
        for (k, v) in entries {
            emit(k, v, out);
        }
    } else {
        for (k, v) in map {
            emit(k, v, out);
        }
    }
    out.push('}');
}

/// Compares two strings by their UTF-16 code units.
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Writes a finite number in ECMAScript form; `-0` is written `0`.
pub fn write_number(n: f64, out: &mut String) {
    debug_assert!(n.is_finite(), "canonical numbers are finite");
    if n == 0.0 {
        out.push('0');
        return;
    }
    // An integer of magnitude below 2^53 is written as its digits (what
    // ECMAScript writes for every integer below 10^21), without the float
    // formatter.
    let magnitude = n.abs();
    if magnitude < 9_007_199_254_740_992.0 {
        // Below 2^53 the conversion to an integer is exact for an integral
        // double, and truncates a fractional one (which then differs):
        // the test needs no call to `trunc`.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let whole = magnitude as u64;
        #[allow(clippy::cast_precision_loss)]
        let integral = whole as f64 == magnitude;
        if integral {
            if n < 0.0 {
                out.push('-');
            }
            write_u64(whole, out);
            return;
        }
    }
    let mut buf = ryu_js::Buffer::new();
    out.push_str(buf.format(n));
}

/// Writes an unsigned integer's decimal digits.
pub fn write_u64(n: u64, out: &mut String) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// Writes a JSON string escaped as `JSON.stringify` does.
pub fn write_string(s: &str, out: &mut String) {
    // Most strings (ids, keys, types) need no escape: one scan, one copy.
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.reserve(s.len() + 2);
        out.push('"');
        out.push_str(s);
        out.push('"');
        return;
    }
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            0x08 => Some("\\b"),
            0x09 => Some("\\t"),
            0x0a => Some("\\n"),
            0x0c => Some("\\f"),
            0x0d => Some("\\r"),
            0x00..=0x1f => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match escape {
            Some(e) => out.push_str(e),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 0xf) as usize] as char);
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Builds a canonical object from `(key, value)` pairs.
pub fn object<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(n: f64) -> String {
        let mut s = String::new();
        write_number(n, &mut s);
        s
    }

    #[test]
    fn numbers_use_ecmascript_form() {
        assert_eq!(num(3.0), "3");
        assert_eq!(num(-0.0), "0");
        assert_eq!(num(0.1), "0.1");
        assert_eq!(num(1e21), "1e+21");
        assert_eq!(num(1e-7), "1e-7");
        assert_eq!(num(123456789012345680000.0), "123456789012345680000");
        assert_eq!(num(-2.5), "-2.5");
        assert_eq!(num(0.0001), "0.0001");
        // Around the integer fast path's edges: the largest integers below
        // 2^53, just past it, and fractions near whole numbers.
        assert_eq!(num(9_007_199_254_740_991.0), "9007199254740991");
        assert_eq!(num(-9_007_199_254_740_991.0), "-9007199254740991");
        assert_eq!(num(9_007_199_254_740_992.0), "9007199254740992");
        assert_eq!(num(4_503_599_627_370_495.5), "4503599627370495.5");
        assert_eq!(num(-1.5), "-1.5");
        assert_eq!(num(0.999_999_999_999_999_9), "0.9999999999999999");
        assert_eq!(num(1e300), "1e+300");
    }

    #[test]
    fn strings_without_escapes_are_written_whole_and_the_same() {
        for text in ["", "plain", "e000001", "tab\there", "quote\"", "ünïcödé 😀"] {
            let mut fast = String::new();
            write_string(text, &mut fast);
            let json = serde_json::to_string(text).unwrap_or_default();
            assert_eq!(fast, json, "{text:?}");
        }
    }

    #[test]
    fn strings_escape_like_json_stringify() {
        let mut s = String::new();
        write_string("a\"b\\c\n\u{1}\u{7f}é\u{2028}", &mut s);
        assert_eq!(s, "\"a\\\"b\\\\c\\n\\u0001\u{7f}é\u{2028}\"");
    }

    #[test]
    fn object_keys_sort_by_utf16_units() {
        // RFC 8785 §3.2.3 example ordering: U+E000-range keys sort after
        // supplementary-plane keys in UTF-16, unlike in UTF-8.
        let v = object([
            ("\u{FB33}", Value::Null),
            ("\u{1F600}", Value::Null),
            ("b", Value::Null),
            ("a", Value::Null),
        ]);
        assert_eq!(
            v.to_canonical_json(),
            "{\"a\":null,\"b\":null,\"\u{1F600}\":null,\"\u{FB33}\":null}"
        );
    }

    #[test]
    fn from_json_round_trips_canonically() {
        let parsed: serde_json::Value =
            serde_json::from_str(r#"{"z":[1.0,-0.0,"x",true,null],"a":{"k":2.50}}"#)
                .expect("valid test JSON");
        let v = Value::from_json(&parsed).expect("finite");
        assert_eq!(
            v.to_canonical_json(),
            r#"{"a":{"k":2.5},"z":[1,0,"x",true,null]}"#
        );
    }
}

#[cfg(test)]
mod number_tests {
    use super::write_number;

    /// The integer shortcut writes exactly what the ECMAScript formatter
    /// writes (RFC 8785 numbers), across the whole range it covers.
    #[test]
    fn integers_are_written_as_ryu_js_writes_them() {
        let mut samples: Vec<f64> = vec![1.0, -1.0, 9.0, 10.0, 99.0, 100.0, 123_456_789.0];
        let mut p = 1.0f64;
        for _ in 0..16 {
            p *= 10.0;
            samples.extend([p, p - 1.0, -p, -(p + 1.0)]);
        }
        let top = 9_007_199_254_740_991.0;
        samples.extend([top, -top, top - 1.0, 4_503_599_627_370_496.0]);
        let mut x = 0x9E37_79B9_u64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Any integer below 2^53, of any size.
            #[allow(clippy::cast_precision_loss)]
            let n = (x >> (11 + x % 50)) as f64;
            samples.extend([n, -n]);
        }
        for n in samples {
            let mut fast = String::new();
            write_number(n, &mut fast);
            let slow = ryu_js::Buffer::new().format(n).to_owned();
            assert_eq!(fast, slow, "{n}");
        }
    }
}
