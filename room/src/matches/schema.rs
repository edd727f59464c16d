//! The JSON Schema of every action a seat may submit (the public
//! manifest's tools, docs/match.md), and the check an attempt passes
//! before it is metered: an input that fails its schema is "schema-invalid"
//! (seed 004) — rejected with the kernel's own code and never charged.
//!
//! The schemas are written from the action registry (docs/actions.md);
//! `tests/matches.rs` holds them to what the kernel accepts.

use digipology_kernel::{FieldValue, Fields, RejectCode, Rejection};
use serde_json::{json, Map, Value};

/// A payload field's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A non-empty string (an id).
    Id,
    /// A finite number.
    Number,
    /// An integer ≥ 1.
    Count,
    /// `true` or `false`.
    Bool,
    /// A canonical transform `{position, rotation, scale}`.
    Transform,
    /// A list of ids.
    Ids,
    /// An object.
    Object,
    /// Any JSON value.
    Any,
}

/// One payload field: name, shape, required.
type Field = (&'static str, Shape, bool);

/// The actions a seat may submit, with their payload fields (sandbox rows
/// — `entity.spawn`, `entity.destroy`, `entity.set_locked` — included:
/// the kernel still refuses them unless `settings.sandbox` is on).
const PLAYER_ACTIONS: &[(&str, &[Field])] = &[
    ("entity.grab", &[("entityId", Shape::Id, true)]),
    (
        "entity.drop",
        &[
            ("entityId", Shape::Id, true),
            ("transform", Shape::Transform, true),
        ],
    ),
    ("entity.flip", &[("entityId", Shape::Id, true)]),
    (
        "entity.set_locked",
        &[("entityId", Shape::Id, true), ("locked", Shape::Bool, true)],
    ),
    (
        "entity.spawn",
        &[
            ("prefabId", Shape::Id, true),
            ("transform", Shape::Transform, false),
            ("props", Shape::Object, false),
        ],
    ),
    ("entity.destroy", &[("entityId", Shape::Id, true)]),
    (
        "container.reorder",
        &[("entityId", Shape::Id, true), ("items", Shape::Ids, true)],
    ),
    ("deck.shuffle", &[("deckId", Shape::Id, true)]),
    (
        "deck.draw_to_container",
        &[
            ("deckId", Shape::Id, true),
            ("target", Shape::Id, true),
            ("count", Shape::Count, true),
        ],
    ),
    (
        "deck.draw_to_world",
        &[
            ("deckId", Shape::Id, true),
            ("transform", Shape::Transform, false),
        ],
    ),
    (
        "deck.deal",
        &[
            ("deckId", Shape::Id, true),
            ("targets", Shape::Ids, true),
            ("cardsEach", Shape::Count, true),
        ],
    ),
    ("stack.remove_top", &[("stackId", Shape::Id, true)]),
    ("die.roll", &[("entityId", Shape::Id, true)]),
    (
        "counter.set",
        &[
            ("entityId", Shape::Id, true),
            ("value", Shape::Number, true),
        ],
    ),
    (
        "counter.add",
        &[
            ("entityId", Shape::Id, true),
            ("amount", Shape::Number, true),
        ],
    ),
    ("button.press", &[("entityId", Shape::Id, true)]),
    (
        "prompt.respond",
        &[
            ("promptId", Shape::Id, true),
            ("response", Shape::Any, true),
        ],
    ),
    (
        "match.sense",
        &[("name", Shape::Id, true), ("input", Shape::Any, false)],
    ),
];

/// The action types a seat may submit.
pub fn player_action_types() -> Vec<&'static str> {
    PLAYER_ACTIONS.iter().map(|(t, _)| *t).collect()
}

fn vec3(names: &[&str]) -> Value {
    let props: Map<String, Value> = names
        .iter()
        .map(|n| ((*n).to_owned(), json!({"type": "number"})))
        .collect();
    json!({"type": "object", "properties": props, "required": names, "additionalProperties": false})
}

fn shape_schema(shape: Shape) -> Value {
    match shape {
        Shape::Id => json!({"type": "string", "minLength": 1}),
        Shape::Number => json!({"type": "number"}),
        Shape::Count => json!({"type": "integer", "minimum": 1}),
        Shape::Bool => json!({"type": "boolean"}),
        Shape::Transform => json!({
            "type": "object",
            "properties": {
                "position": vec3(&["x", "y", "z"]),
                "rotation": vec3(&["x", "y", "z", "w"]),
                "scale": vec3(&["x", "y", "z"]),
            },
            "required": ["position", "rotation", "scale"],
            "additionalProperties": false,
        }),
        Shape::Ids => json!({"type": "array", "items": {"type": "string", "minLength": 1}}),
        Shape::Object => json!({"type": "object"}),
        Shape::Any => json!({}),
    }
}

/// The JSON Schema (draft 2020-12) of one action as a seat submits it:
/// `{type, payload}` (the host fills `source`).
pub fn action_schema(action_type: &str) -> Option<Value> {
    let (_, fields) = PLAYER_ACTIONS.iter().find(|(t, _)| *t == action_type)?;
    let props: Map<String, Value> = fields
        .iter()
        .map(|(n, s, _)| ((*n).to_owned(), shape_schema(*s)))
        .collect();
    let required: Vec<&str> = fields.iter().filter(|f| f.2).map(|f| f.0).collect();
    Some(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "type": {"const": action_type},
            "payload": {
                "type": "object",
                "properties": props,
                "required": required,
                "additionalProperties": false,
            },
        },
        "required": ["type", "payload"],
    }))
}

fn reject(code: RejectCode, message: String) -> Result<(), Rejection> {
    Err(Rejection::new(code, message))
}

fn check_shape(v: &Value, shape: Shape, path: &str) -> Result<(), Rejection> {
    let type_err = |want: &str| reject(RejectCode::InvalidType, format!("{path} must be {want}"));
    match shape {
        Shape::Id => match v.as_str() {
            Some("") => reject(
                RejectCode::InvalidValue,
                format!("{path} must not be empty"),
            ),
            Some(_) => Ok(()),
            None => type_err("a string"),
        },
        Shape::Number => match v.as_f64() {
            Some(n) if n.is_finite() => Ok(()),
            _ if v.is_number() => reject(RejectCode::NotFinite, format!("{path} must be finite")),
            _ => type_err("a number"),
        },
        Shape::Count => match v.as_f64() {
            Some(n) if n >= 1.0 && n.fract() == 0.0 => Ok(()),
            Some(_) => reject(
                RejectCode::InvalidValue,
                format!("{path} must be an integer of at least 1"),
            ),
            None => type_err("a number"),
        },
        Shape::Bool => match v {
            Value::Bool(_) => Ok(()),
            _ => type_err("a boolean"),
        },
        Shape::Transform => digipology_kernel::transform::Transform::from_json(v)
            .map(|_| ())
            .map_err(|m| Rejection::new(RejectCode::InvalidValue, format!("{path}: {m}"))),
        Shape::Ids => match v.as_array() {
            Some(list) => {
                for (i, x) in list.iter().enumerate() {
                    check_shape(x, Shape::Id, &format!("{path}[{i}]"))?;
                }
                Ok(())
            }
            None => type_err("a list of ids"),
        },
        Shape::Object => match v {
            Value::Object(_) => Ok(()),
            _ => type_err("an object"),
        },
        Shape::Any => Ok(()),
    }
}

/// [`check`] for a payload already read into the kernel's fields (the
/// room's fast way in: no JSON built).
///
/// # Errors
/// The first problem.
pub fn check_fields(action_type: &str, payload: &Fields) -> Result<(), Rejection> {
    let Some((_, fields)) = PLAYER_ACTIONS.iter().find(|(t, _)| *t == action_type) else {
        return check(action_type, &Value::Null);
    };
    for (k, _) in payload.iter() {
        if !fields.iter().any(|f| f.0 == k) {
            return reject(
                RejectCode::UnknownKey,
                format!("payload.{k} is not a field of {action_type}"),
            );
        }
    }
    for (name, shape, required) in *fields {
        let path = || format!("payload.{name}");
        match (payload.get(name), shape) {
            (None, _) if *required => {
                return reject(RejectCode::MissingField, format!("{} is required", path()))
            }
            (None, _) | (Some(_), Shape::Any) => {}
            (Some(FieldValue::Str(s)), Shape::Id) if !s.is_empty() => {}
            (Some(FieldValue::Num(n)), Shape::Number) if n.is_finite() => {}
            (Some(FieldValue::Bool(_)), Shape::Bool) => {}
            (Some(FieldValue::Json(j)), Shape::Transform | Shape::Ids | Shape::Object) => {
                check_shape(j, *shape, &path())?;
            }
            // A transform given as one: checked as its JSON would be.
            (Some(v @ FieldValue::Transform(_)), Shape::Transform) => {
                v.read_transform().map_err(|m| {
                    Rejection::new(RejectCode::InvalidValue, format!("{}: {m}", path()))
                })?;
            }
            (Some(v), _) => check_shape(&v.to_json(), *shape, &path())?,
        }
    }
    Ok(())
}

/// Checks a seat's action against its schema: a type a seat may submit,
/// no unknown payload key, every required one, each of its shape. The
/// error carries the code the kernel would give.
///
/// # Errors
/// The first problem.
pub fn check(action_type: &str, payload: &Value) -> Result<(), Rejection> {
    let Some((_, fields)) = PLAYER_ACTIONS.iter().find(|(t, _)| *t == action_type) else {
        return match digipology_kernel::ActionType::from_name(action_type) {
            Some(_) => reject(
                RejectCode::SourceNotAllowed,
                format!("{action_type} is not an action a seat may submit"),
            ),
            None => reject(
                RejectCode::UnknownActionType,
                format!("\"{action_type}\" is not a registered action type"),
            ),
        };
    };
    let Some(obj) = payload.as_object() else {
        return reject(
            RejectCode::MalformedAction,
            "payload must be an object".into(),
        );
    };
    for k in obj.keys() {
        if !fields.iter().any(|f| f.0 == k) {
            return reject(
                RejectCode::UnknownKey,
                format!("payload.{k} is not a field of {action_type}"),
            );
        }
    }
    for (name, shape, required) in *fields {
        match obj.get(*name) {
            Some(v) => check_shape(v, *shape, &format!("payload.{name}"))?,
            None if *required => {
                return reject(
                    RejectCode::MissingField,
                    format!("payload.{name} is required"),
                )
            }
            None => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use digipology_kernel::transform::{Quat, Transform, Vec3};

    /// A drop whose transform is given as one passes or fails the schema
    /// exactly as the same transform given as JSON does.
    #[test]
    fn a_transform_field_is_checked_as_its_json() {
        for (w, scale) in [
            (1.0, 1.0),
            (1.0005, 2.0),
            (2.0, 1.0),
            (1.0, 0.0),
            (f64::NAN, 1.0),
        ] {
            let t = Transform {
                position: Vec3 {
                    x: 1.0,
                    y: -0.0,
                    z: 2.0,
                },
                rotation: Quat {
                    x: 0.0,
                    y: 0.0,
                    z: 0.0,
                    w,
                },
                scale: Vec3 {
                    x: scale,
                    y: 1.0,
                    z: 1.0,
                },
            };
            let check = |v: FieldValue| {
                let mut fields = Fields::new();
                fields.set("entityId", "p1");
                fields.set("transform", v);
                format!("{:?}", check_fields("entity.drop", &fields))
            };
            let given = FieldValue::from(t);
            let as_json = FieldValue::from(given.to_json());
            assert_eq!(check(given), check(as_json), "{t:?}");
        }
    }
}
