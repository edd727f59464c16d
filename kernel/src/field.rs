//! How event data is read without building it: [`Field`], a borrowed
//! value of one data key; [`EventField`], how each field type reads as one;
//! [`FieldSet`], a struct whose fields join an event's data. The event table
//! (`event.rs`) is written in these terms.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::canonical::ids;
use crate::id::Id;
use crate::reject::RejectCode;
use crate::value::{write_number, write_object, write_string, Value};

/// One field of an event's data, borrowed where possible.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Field<'a> {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A finite number.
    Num(f64),
    /// A string.
    Str(&'a str),
    /// A list of ids.
    Ids(&'a [Id]),
    /// Any canonical value.
    Value(&'a Value),
    /// An object (settings).
    Map(&'a BTreeMap<String, Value>),
}

impl Field<'_> {
    /// Writes the field in canonical form (what [`Field::to_value`] would
    /// write, without building it).
    pub fn write_canonical(self, out: &mut String) {
        match self {
            Field::Null => out.push_str("null"),
            Field::Bool(true) => out.push_str("true"),
            Field::Bool(false) => out.push_str("false"),
            Field::Num(n) => write_number(n, out),
            Field::Str(s) => write_string(s, out),
            Field::Ids(list) => {
                out.push('[');
                for (i, id) in list.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(id, out);
                }
                out.push(']');
            }
            Field::Value(v) => v.write_canonical(out),
            Field::Map(m) => write_object(m, out),
        }
    }

    /// The field as an owned canonical value.
    pub fn to_value(self) -> Value {
        match self {
            Field::Null => Value::Null,
            Field::Bool(b) => Value::Bool(b),
            Field::Num(n) => Value::Number(n),
            Field::Str(s) => Value::String(s.to_owned()),
            Field::Ids(list) => ids(list),
            Field::Value(v) => v.clone(),
            Field::Map(m) => Value::Object(m.clone()),
        }
    }
}

/// How a field's type reads as event data.
pub trait EventField {
    /// The field as borrowed data.
    fn field(&self) -> Field<'_>;
}

impl EventField for Id {
    #[inline]
    fn field(&self) -> Field<'_> {
        Field::Str(self)
    }
}

impl EventField for String {
    #[inline]
    fn field(&self) -> Field<'_> {
        Field::Str(self)
    }
}

impl EventField for Cow<'static, str> {
    #[inline]
    fn field(&self) -> Field<'_> {
        Field::Str(self)
    }
}

impl EventField for bool {
    #[inline]
    fn field(&self) -> Field<'_> {
        Field::Bool(*self)
    }
}

impl EventField for f64 {
    #[inline]
    fn field(&self) -> Field<'_> {
        Field::Num(*self)
    }
}

impl EventField for u64 {
    #[inline]
    fn field(&self) -> Field<'_> {
        Field::Num(crate::num::count_to_f64(*self))
    }
}

impl EventField for u32 {
    #[inline]
    fn field(&self) -> Field<'_> {
        Field::Num(f64::from(*self))
    }
}

impl EventField for Value {
    #[inline]
    fn field(&self) -> Field<'_> {
        Field::Value(self)
    }
}

impl EventField for Vec<Id> {
    #[inline]
    fn field(&self) -> Field<'_> {
        Field::Ids(self)
    }
}

impl EventField for BTreeMap<String, Value> {
    #[inline]
    fn field(&self) -> Field<'_> {
        Field::Map(self)
    }
}

impl EventField for RejectCode {
    #[inline]
    fn field(&self) -> Field<'_> {
        Field::Str(self.as_str())
    }
}

impl<T: EventField> EventField for Option<T> {
    #[inline]
    fn field(&self) -> Field<'_> {
        self.as_ref().map_or(Field::Null, EventField::field)
    }
}

/// A field type that names entities.
pub(crate) trait NamesEntities {
    fn push_to<'a>(&'a self, out: &mut Vec<&'a Id>);
}

impl NamesEntities for Id {
    #[inline]
    fn push_to<'a>(&'a self, out: &mut Vec<&'a Id>) {
        out.push(self);
    }
}

impl NamesEntities for Option<Id> {
    #[inline]
    fn push_to<'a>(&'a self, out: &mut Vec<&'a Id>) {
        out.extend(self);
    }
}

impl NamesEntities for Vec<Id> {
    #[inline]
    fn push_to<'a>(&'a self, out: &mut Vec<&'a Id>) {
        out.extend(self);
    }
}

/// A struct whose fields join an event's data (`[flatten]` in the table).
pub trait FieldSet {
    /// Its data keys, in visiting order.
    const KEYS: &'static [&'static str];
    /// Visits each field.
    fn visit<'a>(&'a self, f: &mut dyn FnMut(&'static str, Field<'a>));
}

impl<T: FieldSet> FieldSet for Box<T> {
    const KEYS: &'static [&'static str] = T::KEYS;
    #[inline]
    fn visit<'a>(&'a self, f: &mut dyn FnMut(&'static str, Field<'a>)) {
        (**self).visit(f);
    }
}

/// Implements [`FieldSet`] from `field => "key"` pairs: the keys are written
/// once.
macro_rules! field_set {
    ($ty:ty { $( $field:ident => $key:literal ),* $(,)? }) => {
        impl $crate::field::FieldSet for $ty {
            const KEYS: &'static [&'static str] = &[$($key),*];
            fn visit<'a>(&'a self, f: &mut dyn FnMut(&'static str, $crate::field::Field<'a>)) {
                $( f($key, $crate::field::EventField::field(&self.$field)); )*
            }
        }
    };
}
pub(crate) use field_set;
