//! Canonical transforms: validation and canonicalization.
//!
//! Registry rule: finite position/scale coordinates within ±1,000,000,
//! positive scales, a finite nonzero quaternion normalized within 0.001; the
//! committed transform is normalized and quantized to a 0.0001 grid (and `-0`
//! becomes `0`).

use crate::value::{object, write_number, Value};

/// Largest absolute coordinate accepted for position and scale.
pub const COORD_ABS_MAX: f64 = 1_000_000.0;
/// Allowed distance of the quaternion's length from 1.
pub const QUAT_NORM_TOLERANCE: f64 = 0.001;

/// A 3-vector.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vec3 {
    /// x
    pub x: f64,
    /// y
    pub y: f64,
    /// z
    pub z: f64,
}

/// A rotation quaternion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quat {
    /// x
    pub x: f64,
    /// y
    pub y: f64,
    /// z
    pub z: f64,
    /// w
    pub w: f64,
}

/// A canonical transform (always normalized and quantized once committed).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transform {
    /// Position in table units.
    pub position: Vec3,
    /// Rotation.
    pub rotation: Quat,
    /// Scale; every coordinate positive.
    pub scale: Vec3,
}

impl Default for Transform {
    fn default() -> Self {
        Transform {
            position: Vec3 {
                x: 0.0,
                y: 0.0,
                z: 0.0,
            },
            rotation: Quat {
                x: 0.0,
                y: 0.0,
                z: 0.0,
                w: 1.0,
            },
            scale: Vec3 {
                x: 1.0,
                y: 1.0,
                z: 1.0,
            },
        }
    }
}

/// Quantizes to the 0.0001 grid: `round(v * 10000) / 10000` (ties away from
/// zero), the double nearest the grid point; `-0` becomes `0`.
pub fn quantize(v: f64) -> f64 {
    let q = (v * 10_000.0).round() / 10_000.0;
    if q == 0.0 {
        0.0
    } else {
        q
    }
}

impl Transform {
    /// This transform put where `place` is (the origin, unturned, when
    /// there is none): its position and rotation, keeping its own scale —
    /// where an entity lies after a trip into a hidden place
    /// (docs/observations.md).
    pub fn placed_at(self, place: Option<Transform>) -> Transform {
        let at = place.unwrap_or_default();
        Transform {
            position: at.position,
            rotation: at.rotation,
            scale: self.scale,
        }
    }

    /// Parses, validates and canonicalizes a transform given as JSON.
    ///
    /// # Errors
    /// A message naming the offending field (`position.x`, `rotation`, …).
    pub fn from_json(v: &serde_json::Value) -> Result<Transform, String> {
        let obj = exact_object(v, "transform", &["position", "rotation", "scale"])?;
        let position = vec3(field(obj, "transform", "position")?, "position")?;
        let rotation = quat(field(obj, "transform", "rotation")?)?;
        let scale = vec3(field(obj, "transform", "scale")?, "scale")?;
        Transform {
            position,
            rotation,
            scale,
        }
        .canonicalize()
    }

    /// A transform from its parts as `game.json` gives them, each absent
    /// one taken from the default (origin, no rotation, unit scale);
    /// checked and canonicalized like [`Transform::from_json`].
    ///
    /// # Errors
    /// A message naming the offending field.
    pub fn from_parts(
        position: Option<&serde_json::Value>,
        rotation: Option<&serde_json::Value>,
        scale: Option<&serde_json::Value>,
    ) -> Result<Transform, String> {
        let d = Transform::default();
        Transform {
            position: position.map_or(Ok(d.position), |v| vec3(v, "position"))?,
            rotation: rotation.map_or(Ok(d.rotation), quat)?,
            scale: scale.map_or(Ok(d.scale), |v| vec3(v, "scale"))?,
        }
        .canonicalize()
    }

    /// Writes the canonical JSON of [`Transform::to_value`] without
    /// building the value.
    pub fn write_canonical(&self, out: &mut String) {
        let (p, r, s) = (self.position, self.rotation, self.scale);
        out.push_str("{\"position\":");
        write_numbers(&[("x", p.x), ("y", p.y), ("z", p.z)], out);
        out.push_str(",\"rotation\":");
        write_numbers(&[("w", r.w), ("x", r.x), ("y", r.y), ("z", r.z)], out);
        out.push_str(",\"scale\":");
        write_numbers(&[("x", s.x), ("y", s.y), ("z", s.z)], out);
        out.push('}');
    }

    /// Validates the bounds and returns the normalized, quantized transform.
    ///
    /// # Errors
    /// A message naming the first rule broken.
    pub fn canonicalize(self) -> Result<Transform, String> {
        for (name, v) in [("position", self.position), ("scale", self.scale)] {
            for (axis, c) in [("x", v.x), ("y", v.y), ("z", v.z)] {
                if !c.is_finite() || c.abs() > COORD_ABS_MAX {
                    return Err(format!(
                        "{name}.{axis} must be a finite number within ±1000000"
                    ));
                }
            }
        }
        for (axis, c) in [
            ("x", self.scale.x),
            ("y", self.scale.y),
            ("z", self.scale.z),
        ] {
            if c <= 0.0 || quantize(c) <= 0.0 {
                return Err(format!(
                    "scale.{axis} must be positive (at least 0.0001 after quantization)"
                ));
            }
        }
        let r = self.rotation;
        let parts = [r.x, r.y, r.z, r.w];
        if parts.iter().any(|c| !c.is_finite()) {
            return Err("rotation must have finite components".into());
        }
        let norm = (r.x * r.x + r.y * r.y + r.z * r.z + r.w * r.w).sqrt();
        if norm == 0.0 || !norm.is_finite() || (norm - 1.0).abs() > QUAT_NORM_TOLERANCE {
            return Err(format!(
                "rotation must be a unit quaternion (length within 0.001 of 1, got {norm})"
            ));
        }
        let q3 = |v: Vec3| Vec3 {
            x: quantize(v.x),
            y: quantize(v.y),
            z: quantize(v.z),
        };
        Ok(Transform {
            position: q3(self.position),
            rotation: Quat {
                x: quantize(r.x / norm),
                y: quantize(r.y / norm),
                z: quantize(r.z / norm),
                w: quantize(r.w / norm),
            },
            scale: q3(self.scale),
        })
    }

    /// Whether every part is a finite number.
    pub fn is_finite(&self) -> bool {
        let (p, r, s) = (self.position, self.rotation, self.scale);
        [p.x, p.y, p.z, r.x, r.y, r.z, r.w, s.x, s.y, s.z]
            .iter()
            .all(|c| c.is_finite())
    }

    /// Canonical form.
    pub fn to_value(&self) -> Value {
        let v3 = |v: Vec3| {
            object([
                ("x", Value::Number(v.x)),
                ("y", Value::Number(v.y)),
                ("z", Value::Number(v.z)),
            ])
        };
        let r = self.rotation;
        object([
            ("position", v3(self.position)),
            (
                "rotation",
                object([
                    ("x", Value::Number(r.x)),
                    ("y", Value::Number(r.y)),
                    ("z", Value::Number(r.z)),
                    ("w", Value::Number(r.w)),
                ]),
            ),
            ("scale", v3(self.scale)),
        ])
    }
}

/// Writes `{"k":n,…}` for keys already in canonical order.
fn write_numbers(fields: &[(&str, f64)], out: &mut String) {
    out.push('{');
    for (i, (k, n)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        out.push_str(k);
        out.push_str("\":");
        write_number(*n, out);
    }
    out.push('}');
}

type JsonMap = serde_json::Map<String, serde_json::Value>;

fn exact_object<'a>(
    v: &'a serde_json::Value,
    name: &str,
    keys: &[&str],
) -> Result<&'a JsonMap, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{name} must be an object"))?;
    if let Some(k) = obj.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err(format!(
            "{name} has unknown key \"{k}\" (expected {})",
            keys.join(", ")
        ));
    }
    Ok(obj)
}

fn field<'a>(obj: &'a JsonMap, name: &str, key: &str) -> Result<&'a serde_json::Value, String> {
    obj.get(key)
        .ok_or_else(|| format!("{name}.{key} is missing"))
}

fn num(obj: &JsonMap, name: &str, key: &str) -> Result<f64, String> {
    field(obj, name, key)?
        .as_f64()
        .filter(|n| n.is_finite())
        .ok_or_else(|| format!("{name}.{key} must be a finite number"))
}

fn vec3(v: &serde_json::Value, name: &str) -> Result<Vec3, String> {
    let o = exact_object(v, name, &["x", "y", "z"])?;
    Ok(Vec3 {
        x: num(o, name, "x")?,
        y: num(o, name, "y")?,
        z: num(o, name, "z")?,
    })
}

fn quat(v: &serde_json::Value) -> Result<Quat, String> {
    let o = exact_object(v, "rotation", &["x", "y", "z", "w"])?;
    Ok(Quat {
        x: num(o, "rotation", "x")?,
        y: num(o, "rotation", "y")?,
        z: num(o, "rotation", "z")?,
        w: num(o, "rotation", "w")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Transform, String> {
        let v: serde_json::Value = serde_json::from_str(s).expect("test JSON");
        Transform::from_json(&v)
    }

    const ID_ROT: &str = r#""rotation":{"x":0,"y":0,"z":0,"w":1}"#;
    const UNIT: &str = r#""scale":{"x":1,"y":1,"z":1}"#;

    #[test]
    fn quantizes_to_grid_and_drops_negative_zero() {
        let t = parse(&format!(
            r#"{{"position":{{"x":1.23456,"y":-0.00004,"z":-0.0}},{ID_ROT},{UNIT}}}"#
        ))
        .expect("valid");
        assert_eq!(t.position.x, 1.2346);
        assert_eq!(t.position.y.to_bits(), 0.0f64.to_bits());
        assert_eq!(t.position.z.to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn normalizes_quaternion_within_tolerance() {
        let t = parse(&format!(
            r#"{{"position":{{"x":0,"y":0,"z":0}},"rotation":{{"x":0,"y":0,"z":0,"w":1.0009}},{UNIT}}}"#
        ))
        .expect("within tolerance");
        assert_eq!(t.rotation.w, 1.0);
        let err = parse(&format!(
            r#"{{"position":{{"x":0,"y":0,"z":0}},"rotation":{{"x":0,"y":0,"z":0,"w":1.002}},{UNIT}}}"#
        ))
        .expect_err("outside tolerance");
        assert!(err.contains("unit quaternion"), "{err}");
    }

    #[test]
    fn rejects_out_of_bounds_and_nonpositive_scale_and_unknown_keys() {
        let far = parse(&format!(
            r#"{{"position":{{"x":1000000.5,"y":0,"z":0}},{ID_ROT},{UNIT}}}"#
        ));
        assert!(far.expect_err("bound").contains("position.x"));
        let zero_scale = parse(&format!(
            r#"{{"position":{{"x":0,"y":0,"z":0}},{ID_ROT},"scale":{{"x":1,"y":0,"z":1}}}}"#
        ));
        assert!(zero_scale.expect_err("scale").contains("scale.y"));
        let tiny_scale = parse(&format!(
            r#"{{"position":{{"x":0,"y":0,"z":0}},{ID_ROT},"scale":{{"x":1,"y":0.00001,"z":1}}}}"#
        ));
        assert!(tiny_scale.expect_err("scale").contains("scale.y"));
        let extra = parse(&format!(
            r#"{{"position":{{"x":0,"y":0,"z":0,"q":1}},{ID_ROT},{UNIT}}}"#
        ));
        assert!(extra.expect_err("keys").contains("unknown key \"q\""));
        let zero_q = parse(
            r#"{"position":{"x":0,"y":0,"z":0},"rotation":{"x":0,"y":0,"z":0,"w":0},"scale":{"x":1,"y":1,"z":1}}"#,
        );
        assert!(zero_q.is_err());
    }

    #[test]
    fn bound_is_inclusive() {
        let t = parse(&format!(
            r#"{{"position":{{"x":-1000000,"y":1000000,"z":0}},{ID_ROT},{UNIT}}}"#
        ))
        .expect("inclusive bound");
        assert_eq!(t.position.x, -1_000_000.0);
    }
}
