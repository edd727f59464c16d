//! The ordered-action envelope and the registry of action types.

use serde_json::Value as Json;

use crate::payload::Fields;
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::Id;

/// Who issued an action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A seated or joined player.
    Player {
        /// The player's id.
        player_id: Id,
    },
    /// The room host.
    System,
    /// A Lua script callback (subcommands).
    Script {
        /// Script id.
        script_id: Id,
        /// Binding id.
        binding_id: Id,
    },
}

impl Source {
    /// `player`, `system` or `script`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Source::Player { .. } => "player",
            Source::System => "system",
            Source::Script { .. } => "script",
        }
    }

    /// The acting player's id, for player sources.
    pub fn player_id(&self) -> Option<&str> {
        match self {
            Source::Player { player_id } => Some(player_id),
            _ => None,
        }
    }
}

/// An action's type as given: resolved against the registry once, when
/// the action is built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeName {
    /// A registered type.
    Registered(ActionType),
    /// A name the registry does not know (rejected `unknown_action_type`).
    Unknown(Box<str>),
}

impl TypeName {
    /// Resolves a name.
    pub fn new(name: &str) -> TypeName {
        match ActionType::from_name(name) {
            Some(ty) => TypeName::Registered(ty),
            None => TypeName::Unknown(name.into()),
        }
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        match self {
            TypeName::Registered(ty) => ty.name(),
            TypeName::Unknown(name) => name,
        }
    }

    /// The registered type, if it is one.
    pub fn registered(&self) -> Option<ActionType> {
        match self {
            TypeName::Registered(ty) => Some(*ty),
            TypeName::Unknown(_) => None,
        }
    }
}

impl From<ActionType> for TypeName {
    fn from(ty: ActionType) -> TypeName {
        TypeName::Registered(ty)
    }
}

/// An ordered action as it enters the kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Action {
    /// The action type (`counter.add`, …); may be unknown.
    pub action_type: TypeName,
    /// Who issued it.
    pub source: Source,
    /// The payload.
    pub payload: Fields,
    /// Caller-chosen id; the kernel assigns `a<sequence>` when absent.
    pub action_id: Option<Id>,
    /// Virtual room time in milliseconds (host clock).
    pub at: Option<i64>,
}

const ENVELOPE_KEYS: &[&str] = &["type", "source", "payload", "actionId", "at"];

impl Action {
    /// Builds an action from parts. A payload that is not a JSON object
    /// is kept as an empty one.
    pub fn new(action_type: &str, source: Source, payload: Json) -> Action {
        Action::with_fields(
            TypeName::new(action_type),
            source,
            match payload {
                Json::Object(m) => Fields::from(m),
                _ => Fields::new(),
            },
        )
    }

    /// Builds an action from a resolved type and a payload.
    pub fn with_fields(
        action_type: impl Into<TypeName>,
        source: Source,
        payload: Fields,
    ) -> Action {
        Action {
            action_type: action_type.into(),
            source,
            payload,
            action_id: None,
            at: None,
        }
    }

    /// Reads the envelope from parsed JSON.
    ///
    /// # Errors
    /// `malformed_action` naming the first problem.
    pub fn from_json(v: &Json) -> Result<Action, Rejection> {
        let Some(obj) = v.as_object() else {
            return reject(
                RejectCode::MalformedAction,
                "an action must be a JSON object",
            );
        };
        if let Some(k) = obj.keys().find(|k| !ENVELOPE_KEYS.contains(&k.as_str())) {
            return reject(
                RejectCode::MalformedAction,
                format!(
                    "unknown envelope key \"{k}\" (an action has type, source, payload, and optionally actionId and at)"
                ),
            );
        }
        let action_type = match obj.get("type") {
            Some(Json::String(s)) => TypeName::new(s),
            Some(_) => return reject(RejectCode::MalformedAction, "\"type\" must be a string"),
            None => return reject(RejectCode::MalformedAction, "the action has no \"type\""),
        };
        let source = match obj.get("source") {
            Some(s) => Source::from_json(s)?,
            None => return reject(RejectCode::MalformedAction, "the action has no \"source\""),
        };
        let payload = match obj.get("payload") {
            Some(Json::Object(m)) => Fields::from(m.clone()),
            Some(_) => return reject(RejectCode::MalformedAction, "\"payload\" must be an object"),
            None => return reject(RejectCode::MalformedAction, "the action has no \"payload\""),
        };
        let action_id = match obj.get("actionId") {
            None => None,
            Some(Json::String(s)) if !s.is_empty() => Some(Id::from(s.as_str())),
            Some(_) => {
                return reject(
                    RejectCode::MalformedAction,
                    "\"actionId\" must be a non-empty string",
                )
            }
        };
        let at = match obj.get("at") {
            None => None,
            Some(v) => match v.as_i64() {
                Some(ms) if ms >= 0 => Some(ms),
                _ => {
                    return reject(
                        RejectCode::MalformedAction,
                        "\"at\" must be a non-negative integer number of milliseconds",
                    )
                }
            },
        };
        Ok(Action {
            action_type,
            source,
            payload,
            action_id,
            at,
        })
    }
}

impl Source {
    /// Reads a source object.
    ///
    /// # Errors
    /// `malformed_action` when the shape is wrong.
    pub fn from_json(v: &Json) -> Result<Source, Rejection> {
        let bad = |m: &str| reject(RejectCode::MalformedAction, format!("\"source\" {m}"));
        let Some(obj) = v.as_object() else {
            return bad("must be an object like {\"kind\":\"player\",\"playerId\":\"p1\"}");
        };
        let field = |k: &str| -> Result<Id, Rejection> {
            match obj.get(k) {
                Some(Json::String(s)) => Ok(Id::from(s.as_str())),
                _ => reject(
                    RejectCode::MalformedAction,
                    format!("\"source\" needs a string \"{k}\""),
                ),
            }
        };
        let (source, keys): (Source, &[&str]) = match obj.get("kind").and_then(Json::as_str) {
            Some("player") => (
                Source::Player {
                    player_id: field("playerId")?,
                },
                &["kind", "playerId"],
            ),
            Some("system") => (Source::System, &["kind"]),
            Some("script") => (
                Source::Script {
                    script_id: field("scriptId")?,
                    binding_id: field("bindingId")?,
                },
                &["kind", "scriptId", "bindingId"],
            ),
            _ => return bad("needs \"kind\": \"player\", \"system\" or \"script\""),
        };
        if let Some(k) = obj.keys().find(|k| !keys.contains(&k.as_str())) {
            return bad(&format!("has unknown key \"{k}\""));
        }
        Ok(source)
    }
}

/// Which sources an action type accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sources {
    /// Player sources.
    pub player: PlayerRule,
    /// Script sources.
    pub script: bool,
    /// System sources.
    pub system: bool,
}

/// When a player source is accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlayerRule {
    /// Never.
    Never,
    /// Always.
    Always,
    /// Only when canonical `settings.sandbox` is `true`.
    Sandbox,
}

macro_rules! registry {
    ($(
        $variant:ident => $name:literal, player: $p:ident, script: $s:literal,
        system: $y:literal, apply: $family:ident :: $fn:ident ($($host:ident)?);
    )*) => {
        /// A registered action type (kernel v1 rows implemented so far).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ActionType { $( #[doc = $name] $variant, )* }

        impl ActionType {
            /// Every registered type, in registry order.
            pub const ALL: &'static [ActionType] = &[$(ActionType::$variant,)*];

            /// Looks a type up by name.
            pub fn from_name(name: &str) -> Option<ActionType> {
                match name { $( $name => Some(ActionType::$variant), )* _ => None }
            }

            /// The registry name.
            pub fn name(self) -> &'static str {
                match self { $( ActionType::$variant => $name, )* }
            }

            /// The function that applies it, `family::function` in
            /// `kernel/src/actions/` (the registry's `apply` column).
            pub fn handler(self) -> &'static str {
                match self { $( ActionType::$variant => concat!(stringify!($family), "::", stringify!($fn)), )* }
            }

            /// The sources the registry allows.
            pub fn sources(self) -> Sources {
                match self { $( ActionType::$variant => Sources {
                    player: PlayerRule::$p, script: $s, system: $y,
                }, )* }
            }
        }
    };
}

/// The action registry (seed 000): one row per action type — its name, the
/// sources it accepts and, under `apply`, the function in `actions/` that
/// applies it (`(host)`: the function also asks creator guards). This module
/// sits below `actions/` and does not read that column; `actions::apply` is
/// generated from it. Adding an action is adding a row (ARCHITECTURE.md).
macro_rules! action_registry {
    ($then:ident) => {
        $then! {
            GameStart => "system.game_start", player: Never, script: false, system: true, apply: system::game_start();
            PlayerJoined => "system.player_joined", player: Never, script: false, system: true, apply: system::player_joined();
            PlayerLeft => "system.player_left", player: Never, script: false, system: true, apply: system::player_left();
            SeatAssign => "system.seat_assign", player: Never, script: false, system: true, apply: system::seat_assign();
            PlayerDisconnected => "system.player_disconnected", player: Never, script: false, system: true, apply: system::player_disconnected();
            PlayerRemoved => "system.player_removed", player: Never, script: false, system: true, apply: system::player_removed();
            EntitySpawn => "entity.spawn", player: Sandbox, script: true, system: true, apply: lifecycle::spawn();
            EntityDestroy => "entity.destroy", player: Sandbox, script: true, system: true, apply: lifecycle::destroy();
            EntityGrab => "entity.grab", player: Always, script: false, system: false, apply: entity::grab(host);
            EntityDrop => "entity.drop", player: Always, script: false, system: false, apply: entity::drop(host);
            EntityMove => "entity.move", player: Never, script: true, system: true, apply: entity::move_to();
            EntityFlip => "entity.flip", player: Always, script: true, system: false, apply: entity::flip(host);
            EntitySetLocked => "entity.set_locked", player: Sandbox, script: true, system: false, apply: entity::set_locked();
            ContainerMove => "container.move", player: Never, script: true, system: false, apply: container::move_entity();
            ContainerReorder => "container.reorder", player: Always, script: true, system: false, apply: container::reorder();
            DeckShuffle => "deck.shuffle", player: Always, script: true, system: false, apply: deck::shuffle();
            DeckDrawToContainer => "deck.draw_to_container", player: Always, script: true, system: false, apply: deck::draw_to_container();
            DeckDrawToWorld => "deck.draw_to_world", player: Always, script: true, system: false, apply: deck::draw_to_world();
            DeckDeal => "deck.deal", player: Always, script: true, system: false, apply: deck::deal();
            DieSetValue => "die.set_value", player: Never, script: true, system: false, apply: die::set_value();
            StackRemoveTop => "stack.remove_top", player: Always, script: true, system: false, apply: stack::remove_top();
            StackCreate => "stack.create", player: Never, script: true, system: false, apply: stack::create();
            StackAdd => "stack.add", player: Never, script: true, system: false, apply: stack::add();
            StackMerge => "stack.merge", player: Never, script: true, system: false, apply: stack::merge();
            StackDissolve => "stack.dissolve", player: Never, script: true, system: false, apply: stack::dissolve();
            DieRoll => "die.roll", player: Always, script: true, system: false, apply: die::roll();
            CounterSet => "counter.set", player: Always, script: true, system: false, apply: counter::set();
            CounterAdd => "counter.add", player: Always, script: true, system: false, apply: counter::add();
            ButtonPress => "button.press", player: Always, script: false, system: false, apply: button::press(host);
            TextSet => "text.set", player: Never, script: true, system: false, apply: text::set();
            SnapAttach => "snap.attach", player: Never, script: true, system: false, apply: snap::attach();
            PromptCreate => "prompt.create", player: Never, script: true, system: false, apply: prompt::create();
            PromptCancel => "prompt.cancel", player: Never, script: true, system: true, apply: prompt::cancel();
            PromptRespond => "prompt.respond", player: Always, script: false, system: false, apply: prompt::respond();
            TimerRegister => "timer.register", player: Never, script: true, system: false, apply: timer::register();
            TimerCancel => "timer.cancel", player: Never, script: true, system: false, apply: timer::cancel();
            TimerFire => "system.timer_fire", player: Never, script: false, system: true, apply: timer::fire();
            EntityReveal => "entity.reveal", player: Never, script: true, system: true, apply: secrecy::reveal();
            ContainerSetVisibility => "container.set_visibility", player: Never, script: true, system: true, apply: secrecy::set_visibility();
            MatchFinish => "match.finish", player: Never, script: true, system: true, apply: matches::finish();
            MatchAbort => "match.abort", player: Never, script: true, system: true, apply: matches::abort();
            MatchHalt => "match.halt", player: Never, script: false, system: true, apply: matches::halt();
            MatchHostEvent => "match.host_event", player: Never, script: false, system: true, apply: matches::host_event();
            MatchSense => "match.sense", player: Always, script: false, system: false, apply: matches::sense();
        }
    };
}
pub(crate) use action_registry;

action_registry!(registry);

impl Sources {
    /// Whether `source` may issue the action, given the sandbox setting.
    pub fn allows(self, source: &Source, sandbox: bool) -> bool {
        match source {
            Source::Player { .. } => self.allows_player(sandbox),
            Source::Script { .. } => self.script,
            Source::System => self.system,
        }
    }

    /// Whether a player may issue the action, given the sandbox setting.
    pub fn allows_player(self, sandbox: bool) -> bool {
        match self.player {
            PlayerRule::Never => false,
            PlayerRule::Always => true,
            PlayerRule::Sandbox => sandbox,
        }
    }

    /// The allowed sources in words, for rejection messages.
    pub fn describe(self) -> String {
        let mut parts = Vec::new();
        match self.player {
            PlayerRule::Always => parts.push("player"),
            PlayerRule::Sandbox => parts.push("player (only when settings.sandbox is true)"),
            PlayerRule::Never => {}
        }
        if self.script {
            parts.push("script");
        }
        if self.system {
            parts.push("system");
        }
        parts.join(" or ")
    }
}
