//! An entity and its components: the typed form of `entities[id]` in the
//! canonical state (docs/formats.md lists every component and its
//! defaults).

use std::collections::BTreeMap;

use crate::id::Id;
use crate::transform::{Transform, Vec3};
use crate::value::Value;

/// Largest text value, in UTF-8 bytes.
pub const TEXT_BYTES_MAX: usize = 4096;

/// A joined player.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Player {
    /// Display name, when given at join.
    pub name: Option<String>,
}

/// A `stackable`, `deck`, `grabbable` or `button` component.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Toggle {
    /// Whether the component currently takes part in the rules.
    pub enabled: bool,
}

impl Default for Toggle {
    fn default() -> Self {
        Toggle { enabled: true }
    }
}

/// An ordered container (last item = top for decks).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Container {
    /// Entity ids, bottom first.
    pub items: Vec<Id>,
    /// Maximum number of items, or unbounded.
    pub capacity: Option<u64>,
    /// Who may see what is inside (docs/observations.md).
    pub visibility: Visibility,
}

/// Who may see a container's items: their identities and order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Visibility {
    /// Everyone (the default).
    #[default]
    Public,
    /// Only the owner seat (a hand); others see how many items it holds.
    Private(Id),
    /// Nobody (a face-down draw pile); everyone sees how many.
    Hidden,
}

impl Visibility {
    /// Its name in `game.json` and the canonical state.
    pub fn name(&self) -> &'static str {
        match self {
            Visibility::Public => "public",
            Visibility::Private(_) => "private",
            Visibility::Hidden => "hidden",
        }
    }

    /// The owner seat of a private container.
    pub fn owner(&self) -> Option<&Id> {
        match self {
            Visibility::Private(seat) => Some(seat),
            _ => None,
        }
    }
}

/// A die.
#[derive(Clone, Debug, PartialEq)]
pub struct Die {
    /// Ordered faces: finite numbers or strings.
    pub faces: Vec<Value>,
    /// The face showing, or `null` before the first roll.
    pub value: Value,
    /// Kind; `standard_d6` falls back to faces 1..6 when `faces` is empty.
    pub kind: String,
}

impl Default for Die {
    fn default() -> Self {
        Die {
            faces: Vec::new(),
            value: Value::Null,
            kind: STANDARD_D6.into(),
        }
    }
}

/// The die kind whose faces default to 1..6.
pub const STANDARD_D6: &str = "standard_d6";

impl Die {
    /// The faces a roll chooses from: `faces`, or 1..6 for an empty
    /// `standard_d6`.
    pub fn effective_faces(&self) -> Vec<Value> {
        self.faces_view().to_vec()
    }

    /// [`Die::effective_faces`] without copying them.
    pub fn faces_view(&self) -> &[Value] {
        if self.faces.is_empty() && self.kind == STANDARD_D6 {
            &D6_FACES
        } else {
            &self.faces
        }
    }
}

/// The faces of an empty `standard_d6`.
static D6_FACES: [Value; 6] = [
    Value::Number(1.0),
    Value::Number(2.0),
    Value::Number(3.0),
    Value::Number(4.0),
    Value::Number(5.0),
    Value::Number(6.0),
];

/// A numeric counter with optional bounds.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Counter {
    /// Current value.
    pub value: f64,
    /// Lower bound, inclusive.
    pub min: Option<f64>,
    /// Upper bound, inclusive.
    pub max: Option<f64>,
}

impl Counter {
    /// Clamps to the bounds and turns `-0` into `0`.
    pub fn clamp(&self, v: f64) -> f64 {
        let mut v = v;
        if let Some(min) = self.min {
            v = v.max(min);
        }
        if let Some(max) = self.max {
            v = v.min(max);
        }
        if v == 0.0 {
            0.0
        } else {
            v
        }
    }
}

/// A snap point.
#[derive(Clone, Debug, PartialEq)]
pub struct SnapPoint {
    /// Maximum attachments, or unbounded.
    pub capacity: Option<u64>,
    /// Tags an entity must share one of (when non-empty).
    pub tags: Vec<String>,
    /// Capture radius.
    pub radius: f64,
    /// Attached entity ids, in EntityId order.
    pub attached: Vec<Id>,
}

impl Default for SnapPoint {
    fn default() -> Self {
        SnapPoint {
            capacity: None,
            tags: Vec::new(),
            radius: 1.0,
            attached: Vec::new(),
        }
    }
}

/// An axis-aligned zone around its entity's transform position.
#[derive(Clone, Debug, PartialEq)]
pub struct Zone {
    /// Half extents of the box.
    pub half_extents: Vec3,
    /// Member entity ids, sorted.
    pub members: Vec<Id>,
}

impl Default for Zone {
    fn default() -> Self {
        Zone {
            half_extents: Vec3 {
                x: 1.0,
                y: 1.0,
                z: 1.0,
            },
            members: Vec::new(),
        }
    }
}

/// An entity's components. Absent components are `None`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Components {
    /// Position, rotation, scale.
    pub transform: Option<Transform>,
    /// Can be picked up.
    pub grabbable: Option<Toggle>,
    /// Can join stacks.
    pub stackable: Option<Toggle>,
    /// Is a deck (with `container`).
    pub deck: Option<Toggle>,
    /// Can be pressed.
    pub button: Option<Toggle>,
    /// Can be flipped; holds `flipped`.
    pub flippable: Option<bool>,
    /// Can be locked; holds `locked`.
    pub lockable: Option<bool>,
    /// Ordered items.
    pub container: Option<Container>,
    /// A die.
    pub die: Option<Die>,
    /// A counter.
    pub counter: Option<Counter>,
    /// A text value (≤ 4,096 UTF-8 bytes).
    pub text: Option<String>,
    /// A snap point.
    pub snap_point: Option<SnapPoint>,
    /// A zone.
    pub zone: Option<Zone>,
}

/// Where an entity is. Exclusive: exactly one of these.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Placement {
    /// Free on the table (or nowhere, for entities without a transform).
    #[default]
    World,
    /// Inside the container entity with this id.
    Container(Id),
    /// Attached to the snap point entity with this id.
    Snap(Id),
    /// In the stack with this id.
    Stack(Id),
}

/// An entity.
#[derive(Clone, Debug, PartialEq)]
pub struct Entity {
    /// Unique id; never reused.
    pub id: Id,
    /// Tags, sorted and unique.
    pub tags: Vec<String>,
    /// Creator properties (canonical values).
    pub props: BTreeMap<String, Value>,
    /// The player holding it, if any.
    pub held_by: Option<Id>,
    /// Components.
    pub components: Components,
    /// Derived from containers, snap points and stacks; not serialized.
    pub placement: Placement,
    /// How many times it has gone into a private or hidden container: a
    /// seat that cannot see inside sees it under a new alias afterwards
    /// (docs/observations.md). Canonical; written only when not 0.
    pub trips: u32,
}

impl Entity {
    /// A bare entity with the given id.
    pub fn new(id: &str) -> Entity {
        Entity {
            id: Id::from(id),
            tags: Vec::new(),
            props: BTreeMap::new(),
            held_by: None,
            components: Components::default(),
            placement: Placement::World,
            trips: 0,
        }
    }
}
