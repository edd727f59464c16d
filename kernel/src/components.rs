//! Components from their `game.json` definitions, with their defaults
//! (docs/formats.md, components).

use serde_json::{Map, Value as Json};

use crate::def::{
    as_object, err, nonempty_str, only_keys, opt_bool, opt_count, opt_num, string_list, vec3,
    LoadError,
};
use crate::state::{Container, Counter, Die, Entity, Id, SnapPoint, Toggle, Visibility, Zone};
use crate::transform::Transform;
use crate::value::Value;

/// Component names a `game.json` entity may carry.
pub const COMPONENT_NAMES: &[&str] = &[
    "transform",
    "grabbable",
    "stackable",
    "deck",
    "button",
    "flippable",
    "lockable",
    "container",
    "die",
    "counter",
    "text",
    "snap_point",
    "zone",
];

pub(crate) fn component(e: &mut Entity, name: &str, v: &Json, path: &str) -> Result<(), LoadError> {
    let c = &mut e.components;
    let o = as_object(v, path)?;
    match name {
        "transform" => {
            let full = with_defaults_transform(o, path)?;
            c.transform = Some(full);
        }
        "grabbable" | "stackable" | "deck" | "button" => {
            only_keys(o, &["enabled"], path)?;
            let t = Toggle {
                enabled: opt_bool(o, "enabled", path)?.unwrap_or(true),
            };
            match name {
                "grabbable" => c.grabbable = Some(t),
                "stackable" => c.stackable = Some(t),
                "deck" => c.deck = Some(t),
                _ => c.button = Some(t),
            }
        }
        "flippable" => {
            only_keys(o, &["flipped"], path)?;
            c.flippable = Some(opt_bool(o, "flipped", path)?.unwrap_or(false));
        }
        "lockable" => {
            only_keys(o, &["locked"], path)?;
            c.lockable = Some(opt_bool(o, "locked", path)?.unwrap_or(false));
        }
        "container" => c.container = Some(container(o, path)?),
        "die" => c.die = Some(die(o, path)?),
        "counter" => c.counter = Some(counter(o, path)?),
        "text" => c.text = Some(text(o, path)?),
        "snap_point" => c.snap_point = Some(snap_point(o, path)?),
        "zone" => {
            only_keys(o, &["halfExtents"], path)?;
            let mut z = Zone::default();
            if let Some(h) = o.get("halfExtents") {
                z.half_extents = vec3(h, &format!("{path}.halfExtents"))?;
            }
            c.zone = Some(z);
        }
        _ => {
            return err(
                path,
                format!(
                    "unknown component \"{name}\"; known components: {}",
                    COMPONENT_NAMES.join(", ")
                ),
            )
        }
    }
    Ok(())
}

fn container(o: &Map<String, Json>, path: &str) -> Result<Container, LoadError> {
    only_keys(o, &["items", "capacity", "visibility", "owner"], path)?;
    let visibility = visibility(o, path)?;
    let items = match o.get("items") {
        Some(v) => string_list(v, &format!("{path}.items"))?,
        None => Vec::new(),
    };
    let capacity = opt_count(o, "capacity", path)?;
    if let Some(cap) = capacity {
        if items.len() as u64 > cap {
            return err(
                path,
                format!("holds {} items but its capacity is {cap}", items.len()),
            );
        }
    }
    Ok(Container {
        items: items.iter().map(|s| Id::from(s.as_str())).collect(),
        capacity,
        visibility,
    })
}

/// A container's `visibility` (`public` when absent) and, for `private`,
/// its `owner` seat.
fn visibility(o: &Map<String, Json>, path: &str) -> Result<Visibility, LoadError> {
    let name = match o.get("visibility") {
        None => "public",
        Some(v) => nonempty_str(v, &format!("{path}.visibility"))?,
    };
    let owner = o
        .get("owner")
        .map(|v| nonempty_str(v, &format!("{path}.owner")))
        .transpose()?;
    match (name, owner) {
        ("public", None) => Ok(Visibility::Public),
        ("hidden", None) => Ok(Visibility::Hidden),
        ("private", Some(seat)) => Ok(Visibility::Private(Id::from(seat))),
        ("private", None) => err(
            &format!("{path}.owner"),
            "a private container needs an owner seat",
        ),
        ("public" | "hidden", Some(_)) => err(
            &format!("{path}.owner"),
            "only a private container has an owner",
        ),
        (other, _) => err(
            &format!("{path}.visibility"),
            format!("\"{other}\" is not a visibility (public, private or hidden)"),
        ),
    }
}

fn text(o: &Map<String, Json>, path: &str) -> Result<String, LoadError> {
    only_keys(o, &["value"], path)?;
    let value = match o.get("value") {
        None => String::new(),
        Some(Json::String(s)) => s.clone(),
        Some(_) => return err(&format!("{path}.value"), "must be a string"),
    };
    if value.len() > crate::state::TEXT_BYTES_MAX {
        return err(
            &format!("{path}.value"),
            "text is limited to 4096 UTF-8 bytes",
        );
    }
    Ok(value)
}

fn snap_point(o: &Map<String, Json>, path: &str) -> Result<SnapPoint, LoadError> {
    only_keys(o, &["capacity", "tags", "radius", "attached"], path)?;
    let mut s = SnapPoint {
        capacity: opt_count(o, "capacity", path)?,
        ..SnapPoint::default()
    };
    if let Some(t) = o.get("tags") {
        s.tags = string_list(t, &format!("{path}.tags"))?;
        s.tags.sort();
        s.tags.dedup();
    }
    if let Some(a) = o.get("attached") {
        let mut list = string_list(a, &format!("{path}.attached"))?;
        list.sort();
        s.attached = list.iter().map(|x| Id::from(x.as_str())).collect();
    }
    if let Some(r) = opt_num(o, "radius", path)? {
        if r < 0.0 {
            return err(&format!("{path}.radius"), "must not be negative");
        }
        s.radius = r;
    }
    Ok(s)
}

fn with_defaults_transform(o: &Map<String, Json>, path: &str) -> Result<Transform, LoadError> {
    only_keys(o, &["position", "rotation", "scale"], path)?;
    Transform::from_parts(o.get("position"), o.get("rotation"), o.get("scale")).map_err(|m| {
        LoadError {
            path: path.to_owned(),
            message: m,
        }
    })
}

fn die(o: &Map<String, Json>, path: &str) -> Result<Die, LoadError> {
    only_keys(o, &["faces", "value", "kind"], path)?;
    let mut d = Die::default();
    if let Some(k) = o.get("kind") {
        d.kind = nonempty_str(k, &format!("{path}.kind"))?.to_owned();
    }
    if let Some(f) = o.get("faces") {
        let list = f.as_array().ok_or_else(|| LoadError {
            path: format!("{path}.faces"),
            message: "must be an array of numbers or strings".into(),
        })?;
        for (i, face) in list.iter().enumerate() {
            match face {
                Json::String(s) => d.faces.push(Value::String(s.clone())),
                Json::Number(n) => match n.as_f64() {
                    Some(x) if x.is_finite() => d.faces.push(Value::Number(x)),
                    _ => return err(&format!("{path}.faces[{i}]"), "must be finite"),
                },
                _ => {
                    return err(
                        &format!("{path}.faces[{i}]"),
                        "a face must be a number or a string",
                    )
                }
            }
        }
    }
    let faces = d.effective_faces();
    if faces.is_empty() {
        return err(
            path,
            format!(
                "a die of kind \"{}\" needs a non-empty \"faces\" list",
                d.kind
            ),
        );
    }
    if let Some(v) = o.get("value") {
        let v = Value::from_json(v).map_err(|m| LoadError {
            path: format!("{path}.value"),
            message: m.message,
        })?;
        if v != Value::Null && !faces.contains(&v) {
            return err(
                &format!("{path}.value"),
                "must be one of the die's faces (or null)",
            );
        }
        d.value = v;
    }
    Ok(d)
}

fn counter(o: &Map<String, Json>, path: &str) -> Result<Counter, LoadError> {
    only_keys(o, &["value", "min", "max"], path)?;
    let c = Counter {
        value: opt_num(o, "value", path)?.unwrap_or(0.0),
        min: opt_num(o, "min", path)?,
        max: opt_num(o, "max", path)?,
    };
    if let (Some(min), Some(max)) = (c.min, c.max) {
        if min > max {
            return err(path, "min must not exceed max");
        }
    }
    if c.clamp(c.value) != c.value {
        return err(&format!("{path}.value"), "must lie within min and max");
    }
    Ok(Counter {
        value: if c.value == 0.0 { 0.0 } else { c.value },
        ..c
    })
}
