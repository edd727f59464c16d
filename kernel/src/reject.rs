//! Rejections are data: a stable snake_case code and a message.
//!
//! Codes are declared in precedence order: when an action breaks several
//! rules, the checks run in this order and the first broken one is reported.

use std::fmt;

/// Declares [`RejectCode`] from one table: each code once, with its doc,
/// its variant and its stable name, in precedence order.
macro_rules! reject_codes {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// Why the kernel rejected an action. The snake_case names are stable API.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum RejectCode {
            $($(#[$doc])* $variant,)*
        }

        impl RejectCode {
            /// Every code, in precedence order.
            pub const ALL: &'static [RejectCode] = &[$(RejectCode::$variant,)*];

            /// The stable snake_case name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(RejectCode::$variant => $name,)*
                }
            }
        }
    };
}

reject_codes! {
    /// The match has a result (`match_over` or `match_aborted`): the room
    /// accepts no more actions (docs/match.md).
    MatchOver => "match_over",
    /// The line is not JSON, not an object, or lacks/misshapes
    /// `type`/`source`/`payload`/`actionId`/`at`.
    MalformedAction => "malformed_action",
    /// The `type` names no registered action.
    UnknownActionType => "unknown_action_type",
    /// The action type does not accept this source kind.
    SourceNotAllowed => "source_not_allowed",
    /// A player source names a player who has not joined.
    UnknownPlayer => "unknown_player",
    /// The payload has a key the action does not define (onlyKeys).
    UnknownKey => "unknown_key",
    /// A required payload field is absent.
    MissingField => "missing_field",
    /// A payload field has the wrong JSON type.
    InvalidType => "invalid_type",
    /// A number is NaN or infinite.
    NotFinite => "not_finite",
    /// A field has the right type but a value the action refuses
    /// (an empty id, a non-integer count, a malformed transform, …).
    InvalidValue => "invalid_value",
    /// The action type is not one of the current phase's tools
    /// (docs/match.md, Phases).
    NotInPhase => "not_in_phase",
    /// The seat's balance of the resource an attempt costs is too low
    /// (docs/match.md, Metering).
    ResourceExhausted => "resource_exhausted",
    /// A seat's action on another seat's piece, in a match whose pieces
    /// belong to the seats whose ids they carry as tags (docs/match.md,
    /// `ownership`).
    NotYours => "not_yours",
    /// A `match.*` action in a room that runs no match.
    NoMatch => "no_match",
    /// `system.game_start` arrived at a sequence other than zero.
    SequenceNotZero => "sequence_not_zero",
    /// `system.player_joined` named a player who is already present.
    PlayerExists => "player_exists",
    /// The payload names a player who is not present.
    PlayerNotFound => "player_not_found",
    /// The payload names an entity that does not exist.
    EntityNotFound => "entity_not_found",
    /// `entity.spawn` names a prefab the game does not define.
    PrefabNotFound => "prefab_not_found",
    /// A deal target names a player who has no hand container.
    NoHand => "no_hand",
    /// The payload names a stack that does not exist.
    StackNotFound => "stack_not_found",
    /// `stack.create` with an id that is already a stack.
    StackExists => "stack_exists",
    /// The entity lacks the component the action needs.
    MissingComponent => "missing_component",
    /// The needed component exists but is disabled.
    ComponentDisabled => "component_disabled",
    /// The entity is held by a player.
    AlreadyHeld => "already_held",
    /// A drop by a player who does not hold the entity.
    NotHeld => "not_held",
    /// The entity is locked.
    Locked => "locked",
    /// The entity is in a stack and is not its top.
    NotStackTop => "not_stack_top",
    /// A die is held by a different player than the actor.
    HeldByOther => "held_by_other",
    /// Source and target container are the same entity.
    SameContainer => "same_container",
    /// Two ids that must differ are equal (snap point and entity).
    SameEntity => "same_entity",
    /// `container.move`'s `from` does not match where the entity is.
    SourceMismatch => "source_mismatch",
    /// An insertion index beyond the target's length (or non-zero for the
    /// world).
    IndexOutOfRange => "index_out_of_range",
    /// Moving a container into itself or into something it holds.
    ContainerCycle => "container_cycle",
    /// A stack member that must be in the world is placed elsewhere.
    NotInWorld => "not_in_world",
    /// An id listed twice where items must be unique.
    DuplicateItem => "duplicate_item",
    /// Fewer items than the action needs.
    TooFewItems => "too_few_items",
    /// The entity is already attached to that snap point.
    AlreadyAttached => "already_attached",
    /// The snap point has tags and the entity shares none of them.
    TagMismatch => "tag_mismatch",
    /// The deck has fewer cards than the draw needs.
    InsufficientCards => "insufficient_cards",
    /// The target container lacks room for the whole operation.
    CapacityExceeded => "capacity_exceeded",
    /// A die has no usable faces.
    InvalidFaces => "invalid_faces",
    /// Arithmetic produced a non-finite number.
    NonFiniteResult => "non_finite_result",
    /// A text value is longer than 4,096 UTF-8 bytes.
    TextTooLong => "text_too_long",
    /// `prompt.create` with the id of an existing prompt.
    PromptExists => "prompt_exists",
    /// The payload names a prompt that does not exist.
    PromptNotFound => "prompt_not_found",
    /// The prompt was already answered or canceled.
    PromptClosed => "prompt_closed",
    /// A response from a player the prompt is not for.
    WrongPlayer => "wrong_player",
    /// A response that does not fit the prompt (not a choice, not a boolean,
    /// outside min/max or off the step grid).
    InvalidResponse => "invalid_response",
    /// `timer.register` with the id of an existing timer.
    TimerExists => "timer_exists",
    /// The payload names a timer that does not exist.
    TimerNotFound => "timer_not_found",
    /// A creator guard (`can_act`, `can_grab`, `can_flip`, `can_press`, …)
    /// said no.
    GuardDenied => "guard_denied",
    /// An event cascade exceeded the kernel's depth or subcommand bound.
    CascadeLimit => "cascade_limit",
    /// The action would take what the room holds past its byte budget
    /// (game.json `limits.bytesMax`; docs/lua-api.md, The byte budget).
    StateFull => "state_full",
    /// A script failed; a `script.error` event follows.
    ScriptError => "script_error",
}

impl fmt::Display for RejectCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A game-semantic rejection: an ordinary outcome, not a bug.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// Stable code.
    pub code: RejectCode,
    /// Human-readable explanation.
    pub message: String,
}

impl Rejection {
    /// Builds a rejection.
    pub fn new(code: RejectCode, message: impl Into<String>) -> Rejection {
        Rejection {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// Shorthand for `Err(Rejection::new(code, message))`.
pub(crate) fn reject<T>(code: RejectCode, message: impl Into<String>) -> Result<T, Rejection> {
    Err(Rejection::new(code, message))
}
