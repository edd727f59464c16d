//! Canonical forms of the state's parts (docs/determinism.md): an entity
//! and its components, lists of ids, optional numbers.

use std::collections::BTreeMap;

use crate::entity::{
    Components, Container, Entity, Player, Reveal, SnapPoint, Toggle, Trip, Visibility, Zone,
};
use crate::id::Id;
use crate::records::Stack;
use crate::value::{object, write_number, write_object, write_string, Value};

pub(crate) fn id_map<T>(map: &BTreeMap<Id, T>, f: impl Fn(&T) -> Value) -> Value {
    Value::Object(map.iter().map(|(k, v)| (k.to_string(), f(v))).collect())
}

/// A list of ids as a canonical array.
pub fn ids(items: &[Id]) -> Value {
    Value::Array(items.iter().map(|i| Value::String(i.to_string())).collect())
}

/// A player's canonical form.
pub(crate) fn player_value(p: &Player) -> Value {
    object([("name", Value::from(p.name.clone()))])
}

/// A seat's canonical form: its occupant, or `null` when empty.
pub(crate) fn seat_value(occupant: &Option<Id>) -> Value {
    Value::from(occupant.as_deref())
}

/// A stack's canonical form.
pub(crate) fn stack_value(s: &Stack) -> Value {
    object([("items", ids(&s.items))])
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

/// A container's canonical form: `visibility` (and a private one's
/// `owner`) only when it is not public, so tables that hide nothing keep
/// their form and hash.
fn container_value(k: &Container) -> Value {
    let mut v = object([
        ("items", ids(&k.items)),
        ("capacity", opt_count(k.capacity)),
    ]);
    if let (Value::Object(m), false) = (&mut v, k.visibility == Visibility::Public) {
        m.insert("visibility".into(), Value::from(k.visibility.name()));
        if let Some(owner) = k.visibility.owner() {
            m.insert("owner".into(), Value::from(&**owner));
        }
    }
    v
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

/// Writes the canonical JSON of one entity — exactly
/// `entity_value(e).write_canonical(out)` — without building the value:
/// keys are written in their canonical order as literals.
pub fn write_entity(e: &Entity, out: &mut String) {
    out.push_str("{\"components\":{");
    let mut keys = Keys(true);
    write_components_a(&e.components, &mut keys, out);
    write_components_b(&e.components, &mut keys, out);
    out.push_str("},\"heldBy\":");
    match &e.held_by {
        Some(p) => write_string(p, out),
        None => out.push_str("null"),
    }
    out.push_str(",\"id\":");
    write_string(&e.id, out);
    out.push_str(",\"props\":");
    write_object(&e.props, out);
    if let Some(r) = reveal_value(&e.secrecy.revealed) {
        out.push_str(",\"revealedTo\":");
        r.write_canonical(out);
    }
    out.push_str(",\"tags\":[");
    for (i, t) in e.tags.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(t, out);
    }
    out.push(']');
    if let Some(t) = e.secrecy.trip {
        out.push_str(",\"trip\":");
        trip_value(t).write_canonical(out);
    }
    out.push('}');
}

/// Writes object keys, with the commas between them.
struct Keys(bool);

impl Keys {
    fn key(&mut self, name: &str, out: &mut String) {
        if !self.0 {
            out.push(',');
        }
        self.0 = false;
        write_string(name, out);
        out.push(':');
    }

    /// `"name":{"field":true|false}`.
    fn flag(&mut self, name: &str, field: &str, on: bool, out: &mut String) {
        self.key(name, out);
        out.push('{');
        write_string(field, out);
        out.push_str(if on { ":true}" } else { ":false}" });
    }
}

/// The components from `button` to `die`, in canonical (byte) order.
fn write_components_a(c: &Components, keys: &mut Keys, out: &mut String) {
    if let Some(t) = c.button {
        keys.flag("button", "enabled", t.enabled, out);
    }
    if let Some(k) = &c.container {
        keys.key("container", out);
        container_value(k).write_canonical(out);
    }
    if let Some(k) = &c.counter {
        keys.key("counter", out);
        let opt = |v: Option<f64>, out: &mut String| match v {
            Some(n) => write_number(n, out),
            None => out.push_str("null"),
        };
        out.push_str("{\"max\":");
        opt(k.max, out);
        out.push_str(",\"min\":");
        opt(k.min, out);
        out.push_str(",\"value\":");
        write_number(k.value, out);
        out.push('}');
    }
    if let Some(t) = c.deck {
        keys.flag("deck", "enabled", t.enabled, out);
    }
    if let Some(d) = &c.die {
        keys.key("die", out);
        object([
            ("faces", Value::Array(d.faces.clone())),
            ("value", d.value.clone()),
            ("kind", Value::from(d.kind.as_str())),
        ])
        .write_canonical(out);
    }
}

/// The components from `flippable` to `zone`, in canonical (byte) order.
fn write_components_b(c: &Components, keys: &mut Keys, out: &mut String) {
    if let Some(f) = c.flippable {
        keys.flag("flippable", "flipped", f, out);
    }
    if let Some(t) = c.grabbable {
        keys.flag("grabbable", "enabled", t.enabled, out);
    }
    if let Some(l) = c.lockable {
        keys.flag("lockable", "locked", l, out);
    }
    if let Some(s) = &c.snap_point {
        keys.key("snap_point", out);
        snap_point_value(s).write_canonical(out);
    }
    if let Some(t) = c.stackable {
        keys.flag("stackable", "enabled", t.enabled, out);
    }
    if let Some(t) = &c.text {
        keys.key("text", out);
        out.push_str("{\"value\":");
        write_string(t, out);
        out.push('}');
    }
    if let Some(t) = &c.transform {
        keys.key("transform", out);
        t.write_canonical(out);
    }
    if let Some(z) = &c.zone {
        keys.key("zone", out);
        zone_value(z).write_canonical(out);
    }
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
        put("container", container_value(k));
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
    let mut v = object([
        ("id", Value::from(&*e.id)),
        (
            "tags",
            Value::Array(e.tags.iter().map(|t| Value::from(t.as_str())).collect()),
        ),
        ("props", Value::Object(e.props.clone())),
        ("heldBy", Value::from(e.held_by.as_deref())),
        ("components", Value::Object(comps)),
    ]);
    if let Value::Object(m) = &mut v {
        if let Some(t) = e.secrecy.trip {
            m.insert("trip".into(), trip_value(t));
        }
        if let Some(r) = reveal_value(&e.secrecy.revealed) {
            m.insert("revealedTo".into(), r);
        }
    }
    v
}

/// `[at, n]`.
fn trip_value(t: Trip) -> Value {
    Value::Array(vec![
        Value::Number(crate::num::count_to_f64(t.at)),
        Value::Number(f64::from(t.n)),
    ])
}

/// `"all"`, the list of seats, or nothing when revealed to nobody.
fn reveal_value(r: &Reveal) -> Option<Value> {
    match r {
        Reveal::Nobody => None,
        Reveal::All => Some(Value::from("all")),
        Reveal::Seats(seats) => Some(Value::Array(seats.iter().map(Value::from).collect())),
    }
}

impl From<&Id> for Value {
    fn from(id: &Id) -> Self {
        Value::String(id.to_string())
    }
}
