//! Events: what the kernel emits, one JSONL line each.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use crate::reject::Rejection;
use crate::state::{ids, Id};
use crate::value::{object, write_string, Value};

/// The kind of a script failure (DESIGN §4).
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

/// What happened, with its data.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum EventKind {
    /// `game.started`
    GameStarted {
        /// The settings in force.
        settings: BTreeMap<String, Value>,
    },
    /// `player.joined`
    PlayerJoined {
        /// Who.
        player_id: Id,
        /// Display name.
        name: Option<String>,
    },
    /// `player.left`
    PlayerLeft {
        /// Who.
        player_id: Id,
    },
    /// `seat.assigned`
    SeatAssigned {
        /// Seat.
        seat_id: Id,
        /// Player now in it.
        player_id: Id,
    },
    /// `seat.left`
    SeatLeft {
        /// Seat.
        seat_id: Id,
        /// Player who left it.
        player_id: Id,
    },
    /// `entity.grabbed`
    EntityGrabbed {
        /// Entity.
        entity_id: Id,
        /// Holder.
        player_id: Id,
    },
    /// `entity.dropped`
    EntityDropped {
        /// Entity.
        entity_id: Id,
        /// Former holder.
        player_id: Id,
    },
    /// `entity.flipped`
    EntityFlipped {
        /// Entity.
        entity_id: Id,
        /// New value.
        flipped: bool,
    },
    /// `container.removed`
    ContainerRemoved {
        /// Container left.
        container_id: Id,
        /// Entity removed.
        entity_id: Id,
        /// Its index before removal.
        index: u64,
    },
    /// `container.moved`
    ContainerMoved {
        /// Entity moved.
        entity_id: Id,
        /// Source container, or `None` for the world.
        from: Option<Id>,
        /// Target container, or `None` for the world.
        to: Option<Id>,
        /// Requested insertion index.
        index: u64,
        /// Index in the source container (`None` when it came from the world).
        from_index: Option<u64>,
    },
    /// `stack.created`
    StackCreated {
        /// Stack.
        stack_id: Id,
        /// Items bottom → top.
        items: Vec<Id>,
    },
    /// `stack.changed`
    StackChanged {
        /// Stack.
        stack_id: Id,
        /// Items bottom → top, after the change.
        items: Vec<Id>,
    },
    /// `stack.dissolved`
    StackDissolved {
        /// Stack.
        stack_id: Id,
    },
    /// `zone.entered`
    ZoneEntered {
        /// Zone entity.
        zone_id: Id,
        /// Entity that entered.
        entity_id: Id,
    },
    /// `zone.left`
    ZoneLeft {
        /// Zone entity.
        zone_id: Id,
        /// Entity that left.
        entity_id: Id,
    },
    /// `snap.attached`
    SnapAttached {
        /// Snap point entity.
        snap_point_id: Id,
        /// Attached entity.
        entity_id: Id,
    },
    /// `snap.detached`
    SnapDetached {
        /// Snap point entity.
        snap_point_id: Id,
        /// Detached entity.
        entity_id: Id,
    },
    /// `deck.shuffled`
    DeckShuffled {
        /// Deck.
        deck_id: Id,
    },
    /// `deck.drawn`
    DeckDrawn {
        /// Deck.
        deck_id: Id,
        /// Target container.
        target: Id,
        /// Drawn ids in draw order.
        entity_ids: Vec<Id>,
    },
    /// `die.rolled`
    DieRolled {
        /// Die.
        entity_id: Id,
        /// Face value.
        value: Value,
        /// Face index.
        index: u64,
    },
    /// `counter.changed`
    CounterChanged {
        /// Counter.
        entity_id: Id,
        /// New value.
        value: f64,
        /// Old value.
        previous: f64,
    },
    /// `button.pressed`
    ButtonPressed {
        /// Button.
        entity_id: Id,
        /// Presser.
        player_id: Id,
    },
    /// `text.changed`
    TextChanged {
        /// Text entity.
        entity_id: Id,
        /// New value.
        value: String,
    },
    /// `action.rejected` (produced by the transaction runner).
    ActionRejected {
        /// The action's type, when one could be read.
        action_type: Option<Cow<'static, str>>,
        /// Code and message.
        rejection: Rejection,
    },
    /// `script.error` (follows `action.rejected` with code `script_error`).
    ScriptError {
        /// The failure.
        failure: ScriptFailure,
        /// Sequence of the failed action.
        sequence: u64,
    },
}

impl EventKind {
    /// The event type name (`counter.changed`, …).
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::GameStarted { .. } => "game.started",
            EventKind::PlayerJoined { .. } => "player.joined",
            EventKind::PlayerLeft { .. } => "player.left",
            EventKind::SeatAssigned { .. } => "seat.assigned",
            EventKind::SeatLeft { .. } => "seat.left",
            EventKind::EntityGrabbed { .. } => "entity.grabbed",
            EventKind::EntityDropped { .. } => "entity.dropped",
            EventKind::EntityFlipped { .. } => "entity.flipped",
            EventKind::ContainerRemoved { .. } => "container.removed",
            EventKind::ContainerMoved { .. } => "container.moved",
            EventKind::StackCreated { .. } => "stack.created",
            EventKind::StackChanged { .. } => "stack.changed",
            EventKind::StackDissolved { .. } => "stack.dissolved",
            EventKind::ZoneEntered { .. } => "zone.entered",
            EventKind::ZoneLeft { .. } => "zone.left",
            EventKind::SnapAttached { .. } => "snap.attached",
            EventKind::SnapDetached { .. } => "snap.detached",
            EventKind::DeckShuffled { .. } => "deck.shuffled",
            EventKind::DeckDrawn { .. } => "deck.drawn",
            EventKind::DieRolled { .. } => "die.rolled",
            EventKind::CounterChanged { .. } => "counter.changed",
            EventKind::ButtonPressed { .. } => "button.pressed",
            EventKind::TextChanged { .. } => "text.changed",
            EventKind::ActionRejected { .. } => "action.rejected",
            EventKind::ScriptError { .. } => "script.error",
        }
    }

    /// The entities this event names (for routing to entity bindings).
    pub fn entity_ids(&self) -> Vec<&Id> {
        match self {
            EventKind::EntityGrabbed { entity_id, .. }
            | EventKind::EntityDropped { entity_id, .. }
            | EventKind::EntityFlipped { entity_id, .. }
            | EventKind::DieRolled { entity_id, .. }
            | EventKind::CounterChanged { entity_id, .. }
            | EventKind::ButtonPressed { entity_id, .. }
            | EventKind::TextChanged { entity_id, .. } => vec![entity_id],
            EventKind::DeckShuffled { deck_id } => vec![deck_id],
            EventKind::ContainerRemoved {
                container_id,
                entity_id,
                ..
            } => vec![container_id, entity_id],
            EventKind::ContainerMoved {
                entity_id,
                from,
                to,
                ..
            } => {
                let mut v = vec![entity_id];
                v.extend(from.iter().chain(to.iter()));
                v
            }
            EventKind::StackCreated { items, .. } | EventKind::StackChanged { items, .. } => {
                items.iter().collect()
            }
            EventKind::ZoneEntered { zone_id, entity_id }
            | EventKind::ZoneLeft { zone_id, entity_id } => vec![zone_id, entity_id],
            EventKind::SnapAttached {
                snap_point_id,
                entity_id,
            }
            | EventKind::SnapDetached {
                snap_point_id,
                entity_id,
            } => vec![snap_point_id, entity_id],
            EventKind::DeckDrawn {
                deck_id,
                target,
                entity_ids,
            } => {
                let mut v = vec![deck_id, target];
                v.extend(entity_ids.iter());
                v
            }
            _ => Vec::new(),
        }
    }

    /// The event's `data` object.
    pub fn data(&self) -> Value {
        let s = |id: &Id| Value::from(id);
        match self {
            EventKind::GameStarted { settings } => {
                object([("settings", Value::Object(settings.clone()))])
            }
            EventKind::PlayerJoined { player_id, name } => object([
                ("playerId", s(player_id)),
                ("name", Value::from(name.clone())),
            ]),
            EventKind::PlayerLeft { player_id } => object([("playerId", s(player_id))]),
            EventKind::SeatAssigned { seat_id, player_id }
            | EventKind::SeatLeft { seat_id, player_id } => {
                object([("seatId", s(seat_id)), ("playerId", s(player_id))])
            }
            EventKind::EntityGrabbed {
                entity_id,
                player_id,
            }
            | EventKind::EntityDropped {
                entity_id,
                player_id,
            }
            | EventKind::ButtonPressed {
                entity_id,
                player_id,
            } => object([("entityId", s(entity_id)), ("playerId", s(player_id))]),
            EventKind::EntityFlipped { entity_id, flipped } => object([
                ("entityId", s(entity_id)),
                ("flipped", Value::Bool(*flipped)),
            ]),
            EventKind::DeckShuffled { deck_id } => object([("deckId", s(deck_id))]),
            EventKind::ContainerRemoved {
                container_id,
                entity_id,
                index,
            } => object([
                ("containerId", s(container_id)),
                ("entityId", s(entity_id)),
                ("index", Value::Number(*index as f64)),
            ]),
            EventKind::ContainerMoved {
                entity_id,
                from,
                to,
                index,
                from_index,
            } => object([
                ("entityId", s(entity_id)),
                ("from", from.as_ref().map_or(Value::Null, s)),
                ("to", to.as_ref().map_or(Value::Null, s)),
                ("index", Value::Number(*index as f64)),
                (
                    "fromIndex",
                    from_index.map_or(Value::Null, |i| Value::Number(i as f64)),
                ),
            ]),
            EventKind::StackCreated { stack_id, items }
            | EventKind::StackChanged { stack_id, items } => {
                object([("stackId", s(stack_id)), ("items", ids(items))])
            }
            EventKind::StackDissolved { stack_id } => object([("stackId", s(stack_id))]),
            EventKind::ZoneEntered { zone_id, entity_id }
            | EventKind::ZoneLeft { zone_id, entity_id } => {
                object([("zoneId", s(zone_id)), ("entityId", s(entity_id))])
            }
            EventKind::SnapAttached {
                snap_point_id,
                entity_id,
            }
            | EventKind::SnapDetached {
                snap_point_id,
                entity_id,
            } => object([
                ("snapPointId", s(snap_point_id)),
                ("entityId", s(entity_id)),
            ]),
            EventKind::DeckDrawn {
                deck_id,
                target,
                entity_ids,
            } => object([
                ("deckId", s(deck_id)),
                ("target", s(target)),
                ("entityIds", ids(entity_ids)),
            ]),
            EventKind::DieRolled {
                entity_id,
                value,
                index,
            } => object([
                ("entityId", s(entity_id)),
                ("value", value.clone()),
                ("index", Value::Number(*index as f64)),
            ]),
            EventKind::CounterChanged {
                entity_id,
                value,
                previous,
            } => object([
                ("entityId", s(entity_id)),
                ("value", Value::Number(*value)),
                ("previous", Value::Number(*previous)),
            ]),
            EventKind::TextChanged { entity_id, value } => object([
                ("entityId", s(entity_id)),
                ("value", Value::from(value.as_str())),
            ]),
            EventKind::ActionRejected {
                action_type,
                rejection,
            } => object([
                ("actionType", Value::from(action_type.as_deref())),
                ("code", Value::from(rejection.code.as_str())),
                ("message", Value::from(rejection.message.as_str())),
            ]),
            EventKind::ScriptError { failure, sequence } => object([
                ("scriptId", Value::from(failure.script_id.as_str())),
                ("bindingId", Value::from(failure.binding_id.as_str())),
                ("function", Value::from(failure.function.as_str())),
                (
                    "line",
                    failure
                        .line
                        .map_or(Value::Null, |l| Value::Number(f64::from(l))),
                ),
                ("message", Value::from(failure.message.as_str())),
                ("kind", Value::from(failure.kind.as_str())),
                ("sequence", Value::Number(*sequence as f64)),
            ]),
        }
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
        out.push_str("{\"seq\":");
        out.push_str(&self.seq.to_string());
        out.push_str(",\"actionId\":");
        match &self.action_id {
            ActionId::Given(id) => write_string(id, &mut out),
            ActionId::Auto(seq) => {
                out.push_str("\"a");
                out.push_str(&seq.to_string());
                out.push('"');
            }
        }
        out.push_str(",\"type\":\"");
        out.push_str(self.type_name());
        out.push_str("\",\"data\":");
        self.kind.data().write_canonical(&mut out);
        out.push('}');
        out
    }
}
