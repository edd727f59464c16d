//! Reading `game.json` definitions: every problem is a [`LoadError`] with
//! the JSON path to it, and these helpers read objects, keys, strings,
//! numbers and vectors that way (the loader, components and restore use
//! them).

use serde_json::{Map, Value as Json};

use crate::transform::Vec3;

/// A problem in a game package, with the JSON path where it was found.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct LoadError {
    /// Where in `game.json` (`entities["card_1"].components.die.faces[2]`).
    pub path: String,
    /// What is wrong and what to do.
    pub message: String,
}

pub(crate) fn err<T>(path: &str, message: impl Into<String>) -> Result<T, LoadError> {
    Err(LoadError {
        path: path.to_owned(),
        message: message.into(),
    })
}

pub(crate) fn as_object<'a>(v: &'a Json, path: &str) -> Result<&'a Map<String, Json>, LoadError> {
    v.as_object().ok_or_else(|| LoadError {
        path: path.to_owned(),
        message: "must be an object".into(),
    })
}

pub(crate) fn only_keys(
    o: &Map<String, Json>,
    allowed: &[&str],
    path: &str,
) -> Result<(), LoadError> {
    match o.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => err(
            path,
            format!("unknown key \"{k}\" (allowed: {})", allowed.join(", ")),
        ),
        None => Ok(()),
    }
}

pub(crate) fn nonempty_str<'a>(v: &'a Json, path: &str) -> Result<&'a str, LoadError> {
    match v.as_str() {
        Some(s) if !s.is_empty() => Ok(s),
        _ => err(path, "must be a non-empty string"),
    }
}

pub(crate) fn string_list(v: &Json, path: &str) -> Result<Vec<String>, LoadError> {
    let list = v.as_array().ok_or_else(|| LoadError {
        path: path.to_owned(),
        message: "must be an array of strings".into(),
    })?;
    list.iter()
        .enumerate()
        .map(|(i, s)| nonempty_str(s, &format!("{path}[{i}]")).map(str::to_owned))
        .collect()
}

pub(crate) fn opt_bool(
    o: &Map<String, Json>,
    key: &str,
    path: &str,
) -> Result<Option<bool>, LoadError> {
    match o.get(key) {
        None => Ok(None),
        Some(Json::Bool(b)) => Ok(Some(*b)),
        Some(_) => err(&format!("{path}.{key}"), "must be true or false"),
    }
}

pub(crate) fn opt_num(
    o: &Map<String, Json>,
    key: &str,
    path: &str,
) -> Result<Option<f64>, LoadError> {
    match o.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(n) if n.is_finite() => Ok(Some(n)),
            _ => err(&format!("{path}.{key}"), "must be a finite number or null"),
        },
    }
}

pub(crate) fn opt_count(
    o: &Map<String, Json>,
    key: &str,
    path: &str,
) -> Result<Option<u64>, LoadError> {
    match o.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| LoadError {
            path: format!("{path}.{key}"),
            message: "must be a non-negative integer or null".into(),
        }),
    }
}

pub(crate) fn vec3(v: &Json, path: &str) -> Result<Vec3, LoadError> {
    let o = as_object(v, path)?;
    only_keys(o, &["x", "y", "z"], path)?;
    let get = |k: &str| -> Result<f64, LoadError> {
        match opt_num(o, k, path)? {
            Some(n) if n >= 0.0 => Ok(n),
            _ => err(
                &format!("{path}.{k}"),
                "must be a non-negative finite number",
            ),
        }
    };
    Ok(Vec3 {
        x: get("x")?,
        y: get("y")?,
        z: get("z")?,
    })
}
