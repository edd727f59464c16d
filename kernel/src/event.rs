//! Events: what the kernel emits, one JSONL line each.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use crate::reject::Rejection;
use crate::state::{ids, Id};
use crate::value::{write_string, Value};

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
    /// `player.disconnected`
    PlayerDisconnected {
        /// Who.
        player_id: Id,
    },
    /// `player.removed`
    PlayerRemoved {
        /// Who.
        player_id: Id,
    },
    /// `entity.spawned`
    EntitySpawned {
        /// The new entity.
        entity_id: Id,
        /// Its prefab.
        prefab_id: String,
    },
    /// `entity.destroyed`
    EntityDestroyed {
        /// The entity that is gone.
        entity_id: Id,
    },
    /// `deck.drawn` by `deck.draw_to_world` (target `null`: the world).
    DeckDrawnToWorld {
        /// Deck.
        deck_id: Id,
        /// The card now in the world.
        entity_id: Id,
    },
    /// `deck.dealt`
    DeckDealt {
        /// Deck.
        deck_id: Id,
        /// Cards each target received.
        cards_each: u64,
        /// Resolved target containers, in deal order of a round.
        targets: Vec<Id>,
        /// The cards, in the order they were dealt.
        entity_ids: Vec<Id>,
    },
    /// `prompt.created`
    PromptCreated {
        /// Prompt.
        prompt_id: Id,
        /// Who must answer.
        player_id: Id,
        /// What is asked (boxed: rare and large, it would size every event).
        options: Box<PromptOptions>,
    },
    /// `prompt.responded`
    PromptResponded {
        /// Prompt.
        prompt_id: Id,
        /// Who answered.
        player_id: Id,
        /// The answer.
        response: Value,
    },
    /// `prompt.canceled`
    PromptCanceled {
        /// Prompt.
        prompt_id: Id,
        /// Who it was for.
        player_id: Id,
    },
    /// `timer.registered`
    TimerRegistered {
        /// Timer.
        timer_id: Id,
        /// Delay in milliseconds.
        delay: f64,
        /// Whose callback runs (boxed: rare and large).
        target: Box<TimerTarget>,
    },
    /// `timer.canceled`
    TimerCanceled {
        /// Timer.
        timer_id: Id,
    },
    /// `timer.fired`
    TimerFired {
        /// Timer.
        timer_id: Id,
        /// Whose callback runs (boxed: rare and large).
        target: Box<TimerTarget>,
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
        /// The failure (boxed: rare and large).
        failure: Box<ScriptFailure>,
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
            EventKind::PlayerDisconnected { .. } => "player.disconnected",
            EventKind::PlayerRemoved { .. } => "player.removed",
            EventKind::EntitySpawned { .. } => "entity.spawned",
            EventKind::EntityDestroyed { .. } => "entity.destroyed",
            EventKind::DeckDrawnToWorld { .. } => "deck.drawn",
            EventKind::DeckDealt { .. } => "deck.dealt",
            EventKind::PromptCreated { .. } => "prompt.created",
            EventKind::PromptResponded { .. } => "prompt.responded",
            EventKind::PromptCanceled { .. } => "prompt.canceled",
            EventKind::TimerRegistered { .. } => "timer.registered",
            EventKind::TimerCanceled { .. } => "timer.canceled",
            EventKind::TimerFired { .. } => "timer.fired",
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
            EventKind::EntitySpawned { entity_id, .. }
            | EventKind::EntityDestroyed { entity_id } => vec![entity_id],
            EventKind::DeckDrawnToWorld { deck_id, entity_id } => vec![deck_id, entity_id],
            EventKind::DeckDealt {
                deck_id,
                targets,
                entity_ids,
                ..
            } => std::iter::once(deck_id)
                .chain(targets)
                .chain(entity_ids)
                .collect(),
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
            // Events that name no entity (players, seats, prompts, a
            // dissolved stack's id, timers — a timer's entity is reached
            // through its stored callback — and the runner's reports).
            // Listed one by one: a new event must say which it names.
            EventKind::GameStarted { .. }
            | EventKind::PlayerJoined { .. }
            | EventKind::PlayerLeft { .. }
            | EventKind::PlayerDisconnected { .. }
            | EventKind::PlayerRemoved { .. }
            | EventKind::SeatAssigned { .. }
            | EventKind::SeatLeft { .. }
            | EventKind::StackDissolved { .. }
            | EventKind::PromptCreated { .. }
            | EventKind::PromptResponded { .. }
            | EventKind::PromptCanceled { .. }
            | EventKind::TimerRegistered { .. }
            | EventKind::TimerCanceled { .. }
            | EventKind::TimerFired { .. }
            | EventKind::ActionRejected { .. }
            | EventKind::ScriptError { .. } => Vec::new(),
        }
    }

    /// The event's `data` object (built from [`EventKind::fields`]).
    pub fn data(&self) -> Value {
        let mut map = BTreeMap::new();
        self.fields(&mut |k, v| {
            map.insert(k.to_owned(), v.to_value());
        });
        Value::Object(map)
    }

    /// Visits each field of the event's data without building it: what
    /// script runtimes use to hand events over cheaply.
    pub fn fields(&self, f: &mut dyn FnMut(&'static str, Field<'_>)) {
        use Field::{Bool, Ids, Num, Str};
        match self {
            EventKind::GameStarted { settings } => f("settings", Field::Map(settings)),
            EventKind::PlayerJoined { player_id, name } => {
                f("playerId", Str(player_id));
                f("name", name.as_deref().map_or(Field::Null, Str));
            }
            EventKind::PlayerLeft { player_id } => f("playerId", Str(player_id)),
            EventKind::SeatAssigned { seat_id, player_id }
            | EventKind::SeatLeft { seat_id, player_id } => {
                f("seatId", Str(seat_id));
                f("playerId", Str(player_id));
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
            } => {
                f("entityId", Str(entity_id));
                f("playerId", Str(player_id));
            }
            EventKind::EntityFlipped { entity_id, flipped } => {
                f("entityId", Str(entity_id));
                f("flipped", Bool(*flipped));
            }
            EventKind::ContainerRemoved {
                container_id,
                entity_id,
                index,
            } => {
                f("containerId", Str(container_id));
                f("entityId", Str(entity_id));
                f("index", Num(*index as f64));
            }
            EventKind::ContainerMoved {
                entity_id,
                from,
                to,
                index,
                from_index,
            } => {
                f("entityId", Str(entity_id));
                f("from", from.as_deref().map_or(Field::Null, Str));
                f("to", to.as_deref().map_or(Field::Null, Str));
                f("index", Num(*index as f64));
                f(
                    "fromIndex",
                    from_index.map_or(Field::Null, |i| Num(i as f64)),
                );
            }
            EventKind::StackCreated { stack_id, items }
            | EventKind::StackChanged { stack_id, items } => {
                f("stackId", Str(stack_id));
                f("items", Ids(items));
            }
            EventKind::StackDissolved { stack_id } => f("stackId", Str(stack_id)),
            EventKind::ZoneEntered { zone_id, entity_id }
            | EventKind::ZoneLeft { zone_id, entity_id } => {
                f("zoneId", Str(zone_id));
                f("entityId", Str(entity_id));
            }
            EventKind::SnapAttached {
                snap_point_id,
                entity_id,
            }
            | EventKind::SnapDetached {
                snap_point_id,
                entity_id,
            } => {
                f("snapPointId", Str(snap_point_id));
                f("entityId", Str(entity_id));
            }
            EventKind::DeckShuffled { deck_id } => f("deckId", Str(deck_id)),
            EventKind::DeckDrawn {
                deck_id,
                target,
                entity_ids,
            } => {
                f("deckId", Str(deck_id));
                f("target", Str(target));
                f("entityIds", Ids(entity_ids));
            }
            EventKind::DieRolled {
                entity_id,
                value,
                index,
            } => {
                f("entityId", Str(entity_id));
                f("value", Field::Value(value));
                f("index", Num(*index as f64));
            }
            EventKind::CounterChanged {
                entity_id,
                value,
                previous,
            } => {
                f("entityId", Str(entity_id));
                f("value", Num(*value));
                f("previous", Num(*previous));
            }
            EventKind::TextChanged { entity_id, value } => {
                f("entityId", Str(entity_id));
                f("value", Str(value));
            }
            EventKind::PlayerDisconnected { player_id }
            | EventKind::PlayerRemoved { player_id } => f("playerId", Str(player_id)),
            EventKind::EntitySpawned {
                entity_id,
                prefab_id,
            } => {
                f("entityId", Str(entity_id));
                f("prefabId", Str(prefab_id));
            }
            EventKind::EntityDestroyed { entity_id } => f("entityId", Str(entity_id)),
            EventKind::DeckDrawnToWorld { deck_id, entity_id } => {
                f("deckId", Str(deck_id));
                f("target", Field::Null);
                f("entityIds", Ids(std::slice::from_ref(entity_id)));
            }
            EventKind::DeckDealt {
                deck_id,
                cards_each,
                targets,
                entity_ids,
            } => {
                f("deckId", Str(deck_id));
                f("cardsEach", Num(*cards_each as f64));
                f("targets", Ids(targets));
                f("entityIds", Ids(entity_ids));
            }
            EventKind::PromptCreated {
                prompt_id,
                player_id,
                options,
            } => {
                f("promptId", Str(prompt_id));
                f("playerId", Str(player_id));
                f("kind", Str(&options.kind));
                f("title", Str(&options.title));
                f("choices", Field::Value(&options.choices));
                f("min", Field::Value(&options.min));
                f("max", Field::Value(&options.max));
                f("step", Field::Value(&options.step));
                f("default", Field::Value(&options.default));
            }
            EventKind::PromptResponded {
                prompt_id,
                player_id,
                response,
            } => {
                f("promptId", Str(prompt_id));
                f("playerId", Str(player_id));
                f("response", Field::Value(response));
            }
            EventKind::PromptCanceled {
                prompt_id,
                player_id,
            } => {
                f("promptId", Str(prompt_id));
                f("playerId", Str(player_id));
            }
            EventKind::TimerRegistered {
                timer_id,
                delay,
                target,
            } => {
                f("timerId", Str(timer_id));
                f("delay", Num(*delay));
                f("callback", Str(&target.callback));
                f("scriptId", Str(&target.script_id));
                f("bindingId", Str(&target.binding_id));
                f(
                    "entityId",
                    target.entity_id.as_deref().map_or(Field::Null, Str),
                );
            }
            EventKind::TimerCanceled { timer_id } => f("timerId", Str(timer_id)),
            EventKind::TimerFired { timer_id, target } => {
                f("timerId", Str(timer_id));
                f("callback", Str(&target.callback));
                f("scriptId", Str(&target.script_id));
                f("bindingId", Str(&target.binding_id));
                f(
                    "entityId",
                    target.entity_id.as_deref().map_or(Field::Null, Str),
                );
            }
            EventKind::ActionRejected {
                action_type,
                rejection,
            } => {
                f(
                    "actionType",
                    action_type.as_deref().map_or(Field::Null, Str),
                );
                f("code", Str(rejection.code.as_str()));
                f("message", Str(&rejection.message));
            }
            EventKind::ScriptError { failure, sequence } => {
                f("scriptId", Str(&failure.script_id));
                f("bindingId", Str(&failure.binding_id));
                f("function", Str(&failure.function));
                f(
                    "line",
                    failure.line.map_or(Field::Null, |l| Num(f64::from(l))),
                );
                f("message", Str(&failure.message));
                f("kind", Str(failure.kind.as_str()));
                f("sequence", Num(*sequence as f64));
            }
        }
    }
}

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
