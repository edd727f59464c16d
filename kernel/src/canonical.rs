//! Canonical forms of the state's parts (docs/determinism.md): an entity
//! and its components, lists of ids, optional numbers.

use std::collections::BTreeMap;

use crate::entity::{Entity, SnapPoint, Toggle, Zone};
use crate::id::Id;
use crate::value::{object, Value};

pub(crate) fn id_map<T>(map: &BTreeMap<Id, T>, f: impl Fn(&T) -> Value) -> Value {
    Value::Object(map.iter().map(|(k, v)| (k.to_string(), f(v))).collect())
}

/// A list of ids as a canonical array.
pub fn ids(items: &[Id]) -> Value {
    Value::Array(items.iter().map(|i| Value::String(i.to_string())).collect())
}

pub(crate) fn opt_num(v: Option<f64>) -> Value {
    v.map_or(Value::Null, Value::Number)
}

pub(crate) fn opt_count(v: Option<u64>) -> Value {
    v.map_or(Value::Null, |n| Value::Number(crate::num::count_to_f64(n)))
}

pub(crate) fn toggle(t: Toggle) -> Value {
    object([("enabled", Value::Bool(t.enabled))])
}

fn snap_point_value(s: &SnapPoint) -> Value {
    object([
        ("capacity", opt_count(s.capacity)),
        (
            "tags",
            Value::Array(s.tags.iter().map(|t| Value::from(t.as_str())).collect()),
        ),
        ("radius", Value::Number(s.radius)),
        ("attached", ids(&s.attached)),
    ])
}

fn zone_value(z: &Zone) -> Value {
    let h = z.half_extents;
    object([
        (
            "halfExtents",
            object([
                ("x", Value::Number(h.x)),
                ("y", Value::Number(h.y)),
                ("z", Value::Number(h.z)),
            ]),
        ),
        ("members", ids(&z.members)),
    ])
}

/// The canonical form of one entity.
pub fn entity_value(e: &Entity) -> Value {
    let c = &e.components;
    let mut comps = BTreeMap::new();
    let mut put = |k: &str, v: Value| {
        comps.insert(k.to_owned(), v);
    };
    if let Some(t) = &c.transform {
        put("transform", t.to_value());
    }
    for (name, t) in [
        ("grabbable", c.grabbable),
        ("stackable", c.stackable),
        ("deck", c.deck),
        ("button", c.button),
    ] {
        if let Some(t) = t {
            put(name, toggle(t));
        }
    }
    if let Some(f) = c.flippable {
        put("flippable", object([("flipped", Value::Bool(f))]));
    }
    if let Some(l) = c.lockable {
        put("lockable", object([("locked", Value::Bool(l))]));
    }
    if let Some(k) = &c.container {
        put(
            "container",
            object([
                ("items", ids(&k.items)),
                ("capacity", opt_count(k.capacity)),
            ]),
        );
    }
    if let Some(d) = &c.die {
        put(
            "die",
            object([
                ("faces", Value::Array(d.faces.clone())),
                ("value", d.value.clone()),
                ("kind", Value::from(d.kind.as_str())),
            ]),
        );
    }
    if let Some(k) = &c.counter {
        put(
            "counter",
            object([
                ("value", Value::Number(k.value)),
                ("min", opt_num(k.min)),
                ("max", opt_num(k.max)),
            ]),
        );
    }
    if let Some(t) = &c.text {
        put("text", object([("value", Value::from(t.as_str()))]));
    }
    if let Some(s) = &c.snap_point {
        put("snap_point", snap_point_value(s));
    }
    if let Some(z) = &c.zone {
        put("zone", zone_value(z));
    }
    object([
        ("id", Value::from(&*e.id)),
        (
            "tags",
            Value::Array(e.tags.iter().map(|t| Value::from(t.as_str())).collect()),
        ),
        ("props", Value::Object(e.props.clone())),
        ("heldBy", Value::from(e.held_by.as_deref())),
        ("components", Value::Object(comps)),
    ])
}

impl From<&Id> for Value {
    fn from(id: &Id) -> Self {
        Value::String(id.to_string())
    }
}
