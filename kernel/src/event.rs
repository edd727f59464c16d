//! Events: what the kernel emits, one JSONL line each.
//!
//! Longer than the ~600-line guide on purpose: most of it is the event table
//! (`events!`, one row per event with its fields' docs), which is the single
//! place an event is written and reads best as one list.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use crate::entity::Exposure;
use crate::field::field_set;
use crate::field::NamesEntities;
pub use crate::field::{EventField, Field, FieldSet};
use crate::id::Id;
use crate::reject::Rejection;
use crate::value::{write_string, write_u64, Value};

/// The kind of a script failure (docs/lua-api.md, Errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScriptErrorKind {
    /// A Lua runtime error.
    Runtime,
    /// A script failed to compile.
    Syntax,
    /// The instruction budget (or the kernel's cascade bound) was exceeded.
    Budget,
    /// The VM memory ceiling was exceeded.
    Memory,
    /// A subcommand the script issued was rejected.
    Subcommand,
    /// A forbidden operation was attempted.
    Sandbox,
    /// A guard tried to mutate state.
    GuardMutation,
}

impl ScriptErrorKind {
    /// Stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ScriptErrorKind::Runtime => "runtime",
            ScriptErrorKind::Syntax => "syntax",
            ScriptErrorKind::Budget => "budget",
            ScriptErrorKind::Memory => "memory",
            ScriptErrorKind::Subcommand => "subcommand",
            ScriptErrorKind::Sandbox => "sandbox",
            ScriptErrorKind::GuardMutation => "guard_mutation",
        }
    }
}

/// A script failure reported by the script host (or derived by the kernel
/// from a rejected subcommand).
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptFailure {
    /// Script id from `game.json`.
    pub script_id: String,
    /// Binding id.
    pub binding_id: String,
    /// The callback that failed (`on_start`, `can_grab`, …).
    pub function: String,
    /// Source line, when known.
    pub line: Option<u32>,
    /// What went wrong.
    pub message: String,
    /// Category.
    pub kind: ScriptErrorKind,
}

/// What a `prompt.created` asks.
#[derive(Clone, Debug, PartialEq)]
pub struct PromptOptions {
    /// `choice`, `confirm` or `number`.
    pub kind: String,
    /// The question.
    pub title: String,
    /// Choices (choice prompts), else null.
    pub choices: Value,
    /// Lower bound (number prompts), else null.
    pub min: Value,
    /// Upper bound (number prompts), else null.
    pub max: Value,
    /// Step (number prompts), else null.
    pub step: Value,
    /// The default answer, or null.
    pub default: Value,
}

/// The callback a timer runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimerTarget {
    /// Callback name.
    pub callback: String,
    /// Owning script.
    pub script_id: String,
    /// Owning binding.
    pub binding_id: String,
    /// Entity of an entity binding, if any.
    pub entity_id: Option<String>,
}

/// The event table: one row per event, the single place each event's name,
/// fields, data keys and the entities it names are written.
///
/// A row is `Variant = "type.name" { field: Type => how, … }` where `how`
/// is the field's data key (`"playerId"`), `[entity "entityId"]` for a
/// field naming entities (the event then reaches their entity bindings, in
/// field order), or `[flatten]` for a struct whose own keys join the data
/// ([`FieldSet`]). From it come [`EventKind`], [`EventKind::type_name`],
/// [`EventKind::entity_ids`], [`EventKind::fields`] and [`EVENT_TABLE`].
/// Adding an event is adding a row (ARCHITECTURE.md, "Adding an event").
macro_rules! events {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident = $name:literal {
            $( $(#[doc = $fdoc:literal])* $field:ident : $ty:ty => $how:tt ),* $(,)?
        }
    )*) => {
        /// What happened, with its data.
        #[derive(Clone, Debug, PartialEq)]
        #[non_exhaustive]
        pub enum EventKind {
            $( $(#[doc = $doc])* $variant { $( $(#[doc = $fdoc])* $field: $ty, )* }, )*
        }

        /// Every event, in table order: its type name and data keys.
        pub const EVENT_TABLE: &[EventSchema] = &[
            $( EventSchema {
                variant: stringify!($variant),
                type_name: $name,
                keys: &[ $( event_key!($ty, $how), )* ],
            }, )*
        ];

        impl EventKind {
            /// The event type name (`counter.changed`, …).
            pub fn type_name(&self) -> &'static str {
                match self { $( EventKind::$variant { .. } => $name, )* }
            }

            /// The entities this event names, in field order: the event
            /// reaches their entity bindings.
            pub fn entity_ids(&self) -> Vec<&Id> {
                let mut out = Vec::new();
                match self {
                    $( EventKind::$variant { $( $field, )* } => {
                        $( event_entities!(out, $field, $how); )*
                    } )*
                }
                out
            }

            /// Whether the data key `key` names entities in this event.
            pub fn is_entity_key(&self, key: &str) -> bool {
                match self {
                    $( EventKind::$variant { .. } => {
                        false $( || event_is_entity!(key, $how) )*
                    } )*
                }
            }

            /// Visits each field of the event's data without building it:
            /// what script runtimes use to hand events over cheaply.
            pub fn fields<'a>(&'a self, f: &mut dyn FnMut(&'static str, Field<'a>)) {
                match self {
                    $( EventKind::$variant { $( $field, )* } => {
                        $( event_visit!(f, $field, $how); )*
                    } )*
                }
            }
        }
    };
}

macro_rules! event_key {
    ($ty:ty, [entity $key:literal]) => {
        DataKey::Entity($key)
    };
    ($ty:ty, [flatten]) => {
        DataKey::Flatten(<$ty as FieldSet>::KEYS)
    };
    ($ty:ty, $key:literal) => {
        DataKey::Plain($key)
    };
}

macro_rules! event_entities {
    ($out:ident, $v:ident, [entity $key:literal]) => {
        NamesEntities::push_to($v, &mut $out)
    };
    ($out:ident, $v:ident, $other:tt) => {
        let _ = $v;
    };
}

macro_rules! event_is_entity {
    ($key:ident, [entity $k:literal]) => {
        $key == $k
    };
    ($key:ident, $other:tt) => {
        false
    };
}

macro_rules! event_visit {
    ($f:ident, $v:ident, [flatten]) => {
        FieldSet::visit($v, $f)
    };
    ($f:ident, $v:ident, [entity $key:literal]) => {
        $f($key, EventField::field($v))
    };
    ($f:ident, $v:ident, $key:literal) => {
        $f($key, EventField::field($v))
    };
}

events! {
    /// `game.started`
    GameStarted = "game.started" {
        /// The settings in force.
        settings: BTreeMap<String, Value> => "settings",
    }
    /// `player.joined`
    PlayerJoined = "player.joined" {
        /// Who.
        player_id: Id => "playerId",
        /// Display name.
        name: Option<String> => "name",
    }
    /// `player.left`
    PlayerLeft = "player.left" {
        /// Who.
        player_id: Id => "playerId",
    }
    /// `seat.assigned`
    SeatAssigned = "seat.assigned" {
        /// Seat.
        seat_id: Id => "seatId",
        /// Player now in it.
        player_id: Id => "playerId",
    }
    /// `seat.left`
    SeatLeft = "seat.left" {
        /// Seat.
        seat_id: Id => "seatId",
        /// Player who left it.
        player_id: Id => "playerId",
    }
    /// `entity.grabbed`
    EntityGrabbed = "entity.grabbed" {
        /// Entity.
        entity_id: Id => [entity "entityId"],
        /// Holder.
        player_id: Id => "playerId",
    }
    /// `entity.dropped`
    EntityDropped = "entity.dropped" {
        /// Entity.
        entity_id: Id => [entity "entityId"],
        /// Former holder.
        player_id: Id => "playerId",
    }
    /// `entity.flipped`
    EntityFlipped = "entity.flipped" {
        /// Entity.
        entity_id: Id => [entity "entityId"],
        /// New value.
        flipped: bool => "flipped",
    }
    /// `container.removed`
    ContainerRemoved = "container.removed" {
        /// Container left.
        container_id: Id => [entity "containerId"],
        /// Entity removed.
        entity_id: Id => [entity "entityId"],
        /// Its index before removal.
        index: u64 => "index",
    }
    /// `container.moved`
    ContainerMoved = "container.moved" {
        /// Entity moved.
        entity_id: Id => [entity "entityId"],
        /// Source container, or `None` for the world.
        from: Option<Id> => [entity "from"],
        /// Target container, or `None` for the world.
        to: Option<Id> => [entity "to"],
        /// Requested insertion index.
        index: u64 => "index",
        /// Index in the source container (`None` when it came from the world).
        from_index: Option<u64> => "fromIndex",
    }
    /// `container.reordered`: by `container.reorder` (a player arranging
    /// the items of a container it sees into, as in sorting a hand).
    ContainerReordered = "container.reordered" {
        /// The container.
        container_id: Id => [entity "containerId"],
        /// Its items in their new order, first to last.
        items: Vec<Id> => [entity "items"],
    }
    /// `stack.created`
    StackCreated = "stack.created" {
        /// Stack (a stack is not an entity: it has no bindings).
        stack_id: Id => "stackId",
        /// Items bottom → top.
        items: Vec<Id> => [entity "items"],
    }
    /// `stack.changed`
    StackChanged = "stack.changed" {
        /// Stack.
        stack_id: Id => "stackId",
        /// Items bottom → top, after the change.
        items: Vec<Id> => [entity "items"],
    }
    /// `stack.dissolved`
    StackDissolved = "stack.dissolved" {
        /// Stack.
        stack_id: Id => "stackId",
    }
    /// `zone.entered`
    ZoneEntered = "zone.entered" {
        /// Zone entity.
        zone_id: Id => [entity "zoneId"],
        /// Entity that entered.
        entity_id: Id => [entity "entityId"],
    }
    /// `zone.left`
    ZoneLeft = "zone.left" {
        /// Zone entity.
        zone_id: Id => [entity "zoneId"],
        /// Entity that left.
        entity_id: Id => [entity "entityId"],
    }
    /// `snap.attached`
    SnapAttached = "snap.attached" {
        /// Snap point entity.
        snap_point_id: Id => [entity "snapPointId"],
        /// Attached entity.
        entity_id: Id => [entity "entityId"],
    }
    /// `snap.detached`
    SnapDetached = "snap.detached" {
        /// Snap point entity.
        snap_point_id: Id => [entity "snapPointId"],
        /// Detached entity.
        entity_id: Id => [entity "entityId"],
    }
    /// `deck.shuffled`
    DeckShuffled = "deck.shuffled" {
        /// Deck.
        deck_id: Id => [entity "deckId"],
    }
    /// `deck.drawn`: by `deck.draw_to_container` (target the container) or
    /// `deck.draw_to_world` (target `None`: the world, one card).
    DeckDrawn = "deck.drawn" {
        /// Deck.
        deck_id: Id => [entity "deckId"],
        /// Target container, or `None` for the world.
        target: Option<Id> => [entity "target"],
        /// Drawn ids in draw order.
        entity_ids: Vec<Id> => [entity "entityIds"],
    }
    /// `die.rolled`
    DieRolled = "die.rolled" {
        /// Die.
        entity_id: Id => [entity "entityId"],
        /// Face value.
        value: Value => "value",
        /// Face index.
        index: u64 => "index",
    }
    /// `counter.changed`
    CounterChanged = "counter.changed" {
        /// Counter.
        entity_id: Id => [entity "entityId"],
        /// New value.
        value: f64 => "value",
        /// Old value.
        previous: f64 => "previous",
    }
    /// `button.pressed`
    ButtonPressed = "button.pressed" {
        /// Button.
        entity_id: Id => [entity "entityId"],
        /// Presser.
        player_id: Id => "playerId",
    }
    /// `text.changed`
    TextChanged = "text.changed" {
        /// Text entity.
        entity_id: Id => [entity "entityId"],
        /// New value.
        value: String => "value",
    }
    /// `player.disconnected`
    PlayerDisconnected = "player.disconnected" {
        /// Who.
        player_id: Id => "playerId",
    }
    /// `player.removed`
    PlayerRemoved = "player.removed" {
        /// Who.
        player_id: Id => "playerId",
    }
    /// `entity.spawned`
    EntitySpawned = "entity.spawned" {
        /// The new entity.
        entity_id: Id => [entity "entityId"],
        /// Its prefab.
        prefab_id: String => "prefabId",
    }
    /// `entity.destroyed`
    EntityDestroyed = "entity.destroyed" {
        /// The entity that is gone.
        entity_id: Id => [entity "entityId"],
    }
    /// `deck.dealt`
    DeckDealt = "deck.dealt" {
        /// Deck.
        deck_id: Id => [entity "deckId"],
        /// Cards each target received.
        cards_each: u64 => "cardsEach",
        /// Resolved target containers, in deal order of a round.
        targets: Vec<Id> => [entity "targets"],
        /// The cards, in the order they were dealt.
        entity_ids: Vec<Id> => [entity "entityIds"],
    }
    /// `prompt.created`
    PromptCreated = "prompt.created" {
        /// Prompt.
        prompt_id: Id => "promptId",
        /// Who must answer.
        player_id: Id => "playerId",
        /// What is asked (boxed: rare and large, it would size every event).
        options: Box<PromptOptions> => [flatten],
    }
    /// `prompt.responded`
    PromptResponded = "prompt.responded" {
        /// Prompt.
        prompt_id: Id => "promptId",
        /// Who answered.
        player_id: Id => "playerId",
        /// The answer.
        response: Value => "response",
    }
    /// `prompt.canceled`
    PromptCanceled = "prompt.canceled" {
        /// Prompt.
        prompt_id: Id => "promptId",
        /// Who it was for.
        player_id: Id => "playerId",
    }
    /// `timer.registered` (a timer's entity is reached through its stored
    /// callback, not through entity bindings).
    TimerRegistered = "timer.registered" {
        /// Timer.
        timer_id: Id => "timerId",
        /// Delay in milliseconds.
        delay: f64 => "delay",
        /// Whose callback runs (boxed: rare and large).
        target: Box<TimerTarget> => [flatten],
    }
    /// `timer.canceled`
    TimerCanceled = "timer.canceled" {
        /// Timer.
        timer_id: Id => "timerId",
    }
    /// `timer.fired`
    TimerFired = "timer.fired" {
        /// Timer.
        timer_id: Id => "timerId",
        /// Whose callback runs (boxed: rare and large).
        target: Box<TimerTarget> => [flatten],
    }
    /// `entity.revealed`: shown to seats (or everyone) until its next trip.
    EntityRevealed = "entity.revealed" {
        /// The entity.
        entity_id: Id => [entity "entityId"],
        /// `"all"` or the seats it was revealed to by this action.
        seats: Value => "seats",
    }
    /// `container.visibility_changed`
    ContainerVisibilityChanged = "container.visibility_changed" {
        /// The container.
        container_id: Id => [entity "containerId"],
        /// `public`, `private` or `hidden`.
        visibility: String => "visibility",
        /// The owner seat of a private container.
        owner: Option<Id> => "owner",
    }
    /// `match.over`: the match ended with these scores (docs/match.md).
    MatchOver = "match.over" {
        /// Seat → score.
        scores: Value => "scores",
    }
    /// `match.aborted`: the match ended without a result.
    MatchAborted = "match.aborted" {
        /// Why.
        reason: String => "reason",
    }
    /// `match.host_event`: an expiry the room sequenced (delivered to
    /// `on_host_event`).
    MatchHostEvent = "match.host_event" {
        /// `player_time_exhausted`, `decision_expired`,
        /// `invalid_retries_exhausted` or `phase_deadline`.
        kind: String => "kind",
        /// The seat it concerns (null for a phase deadline).
        seat: Option<Id> => "seat",
        /// The phase it happened in (null when the game has none).
        phase: Option<String> => "phase",
    }
    /// `match.sensed`: a sensing tool's answer (shown only to its seat).
    MatchSensed = "match.sensed" {
        /// The seat that asked.
        seat: Id => "seat",
        /// The sensing tool.
        name: String => "name",
        /// What it was asked.
        input: Value => "input",
        /// Its answer.
        answer: Value => "answer",
    }
    /// `action.rejected` (produced by the transaction runner).
    ActionRejected = "action.rejected" {
        /// The action's type, when one could be read.
        action_type: Option<Cow<'static, str>> => "actionType",
        /// Code and message.
        rejection: Rejection => [flatten],
    }
    /// `script.error` (follows `action.rejected` with code `script_error`).
    ScriptError = "script.error" {
        /// The failure (boxed: rare and large).
        failure: Box<ScriptFailure> => [flatten],
        /// Sequence of the failed action.
        sequence: u64 => "sequence",
    }
}

/// One row of [`EVENT_TABLE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventSchema {
    /// The `EventKind` variant.
    pub variant: &'static str,
    /// The event type name.
    pub type_name: &'static str,
    /// Its data keys, in visiting order.
    pub keys: &'static [DataKey],
}

impl EventSchema {
    /// Every data key, flattened structs included.
    pub fn data_keys(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        for k in self.keys {
            match k {
                DataKey::Plain(k) | DataKey::Entity(k) => out.push(*k),
                DataKey::Flatten(keys) => out.extend_from_slice(keys),
            }
        }
        out
    }

    /// The data keys whose values name entities.
    pub fn entity_keys(&self) -> Vec<&'static str> {
        self.keys
            .iter()
            .filter_map(|k| match k {
                DataKey::Entity(k) => Some(*k),
                _ => None,
            })
            .collect()
    }
}

/// A data key of an event row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataKey {
    /// A key whose value names no entity.
    Plain(&'static str),
    /// A key whose value names entities (an id, an optional id or a list).
    Entity(&'static str),
    /// A struct's own keys ([`FieldSet::KEYS`]).
    Flatten(&'static [&'static str]),
}

impl EventField for ScriptErrorKind {
    fn field(&self) -> Field<'_> {
        Field::Str(self.as_str())
    }
}

field_set!(PromptOptions {
    kind => "kind",
    title => "title",
    choices => "choices",
    min => "min",
    max => "max",
    step => "step",
    default => "default",
});

field_set!(TimerTarget {
    callback => "callback",
    script_id => "scriptId",
    binding_id => "bindingId",
    entity_id => "entityId",
});

field_set!(Rejection {
    code => "code",
    message => "message",
});

field_set!(ScriptFailure {
    script_id => "scriptId",
    binding_id => "bindingId",
    function => "function",
    line => "line",
    message => "message",
    kind => "kind",
});

/// Most data keys an event has (prompt.created has 9).
const DATA_KEYS_MAX: usize = 16;

impl EventKind {
    /// Writes the event's `data` object in canonical form, straight from
    /// [`EventKind::fields`]: keys sorted (they are ASCII, so byte order is
    /// RFC 8785's UTF-16 order), each value written as it is held.
    pub fn write_data(&self, out: &mut String) {
        let mut keyed = [("", Field::Null); DATA_KEYS_MAX];
        let mut n = 0;
        self.fields(&mut |k, v| {
            if let Some(slot) = keyed.get_mut(n) {
                *slot = (k, v);
            }
            n += 1;
        });
        if n > DATA_KEYS_MAX {
            // More keys than the table holds today: the general way.
            self.data().write_canonical(out);
            return;
        }
        let keyed = &mut keyed[..n];
        keyed.sort_unstable_by(|a, b| a.0.cmp(b.0));
        out.push('{');
        for (i, (k, v)) in keyed.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_string(k, out);
            out.push(':');
            v.write_canonical(out);
        }
        out.push('}');
    }

    /// The event's `data` object (built from [`EventKind::fields`]).
    pub fn data(&self) -> Value {
        let mut map = BTreeMap::new();
        self.fields(&mut |k, v| {
            map.insert(k.to_owned(), v.to_value());
        });
        Value::Object(map)
    }
}

/// An action's id: given by the caller, or `a<sequence>` assigned by the
/// kernel (kept as the number, so assigning it costs no allocation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActionId {
    /// Assigned: written `a<sequence>`.
    Auto(u64),
    /// Given by the caller.
    Given(Id),
}

impl ActionId {
    /// The given id, or `a<seq>`.
    pub fn new(given: Option<&Id>, seq: u64) -> ActionId {
        given.map_or(ActionId::Auto(seq), |id| ActionId::Given(id.clone()))
    }
}

impl fmt::Display for ActionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ActionId::Auto(seq) => write!(f, "a{seq}"),
            ActionId::Given(id) => f.write_str(id),
        }
    }
}

/// An emitted event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Sequence of the top-level action that produced it.
    pub seq: u64,
    /// That action's id.
    pub action_id: ActionId,
    /// What happened.
    pub kind: EventKind,
    /// How the entities it names could be seen when it happened, for those
    /// not in plain sight of everyone (docs/observations.md, The events a
    /// viewer sees): what its projection for a seat is judged by. `None`
    /// when nothing in its action could make an entity more visible than
    /// at the end: it is then judged by the state after the action.
    pub seen: Option<Vec<(Id, Exposure)>>,
}

impl Event {
    /// The event type name.
    pub fn type_name(&self) -> &'static str {
        self.kind.type_name()
    }

    /// One JSONL line (without the newline):
    /// `{"seq":…,"actionId":…,"type":…,"data":{…}}`, data in canonical form.
    pub fn to_json_line(&self) -> String {
        let mut out = String::with_capacity(96);
        self.write_json_line(&mut out);
        out
    }

    /// Appends [`Event::to_json_line`] to `out` (a buffer the caller
    /// reuses): the data is written straight from the event's fields, in
    /// canonical key order, with no intermediate value.
    pub fn write_json_line(&self, out: &mut String) {
        self.write_head(out);
        self.kind.write_data(out);
        out.push('}');
    }

    /// Appends the line up to its data: `{"seq":…,"actionId":…,"type":…,"data":`
    /// (shared with the projected lines, docs/observations.md).
    pub fn write_head(&self, out: &mut String) {
        out.push_str("{\"seq\":");
        write_u64(self.seq, out);
        out.push_str(",\"actionId\":");
        match &self.action_id {
            ActionId::Given(id) => write_string(id, out),
            ActionId::Auto(seq) => {
                out.push_str("\"a");
                write_u64(*seq, out);
                out.push('"');
            }
        }
        out.push_str(",\"type\":\"");
        out.push_str(self.type_name());
        out.push_str("\",\"data\":");
    }
}
