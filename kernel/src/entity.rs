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
    /// Its last trip into a hidden place and who it is revealed to
    /// (docs/observations.md). Canonical; written only when set.
    pub secrecy: Secrecy,
}

/// An entity's hidden-information bookkeeping (docs/observations.md).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Secrecy {
    /// Its last trip into a private or hidden container: a seat that cannot
    /// see inside sees it under a new alias afterwards.
    pub trip: Option<Trip>,
    /// Who has been shown what it is since that trip.
    pub revealed: Reveal,
}

/// When an entity last went into a private or hidden container: the
/// `n`-th such entry (from 1) while the room's sequence was `at` (the
/// action numbered `at - 1`; `at` 0 is the game file itself). Canonical
/// `"trip": [at, n]`. It names a moment every seat saw, not the entity, so
/// aliases drawn from it say nothing about which card it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trip {
    /// The room's sequence once the moving action finished (0: loading).
    pub at: u64,
    /// Its place among that action's trips, from 1.
    pub n: u32,
}

/// Who an entity has been revealed to, until its next trip.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Reveal {
    /// Nobody beyond what the table shows.
    #[default]
    Nobody,
    /// These seats (sorted, unique).
    Seats(Vec<Id>),
    /// Every seat and every spectator.
    All,
}

impl Reveal {
    /// Whether it reveals to `seat` (`None`: a spectator).
    pub fn shows(&self, seat: Option<&Id>) -> bool {
        match self {
            Reveal::Nobody => false,
            Reveal::All => true,
            Reveal::Seats(seats) => seat.is_some_and(|s| seats.binary_search(s).is_ok()),
        }
    }
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
            secrecy: Secrecy::default(),
        }
    }
}

/// Where an entity lies, as far as hiding goes (the same for every viewer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Within {
    /// On the table or in public containers.
    Table,
    /// In containers private to this seat (and otherwise public ones).
    Private(Id),
    /// In a hidden container, or in private containers of two seats.
    Hidden,
}

/// What a viewer needs to know about an entity to see it: kept for the
/// entities an action destroyed, whose events still name them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exposure {
    pub(crate) within: Within,
    pub(crate) face_down: bool,
    pub(crate) revealed: Reveal,
    pub(crate) alias: String,
    /// For a container: where its items lie, which says who sees them and
    /// where they lie (docs/observations.md, Positions); `None` otherwise.
    pub(crate) inside: Option<Within>,
}
