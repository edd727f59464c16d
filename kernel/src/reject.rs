//! Rejections are data: a stable snake_case code and a message.
//!
//! Codes are declared in precedence order: when an action breaks several
//! rules, the checks run in this order and the first broken one is reported.

use std::fmt;

/// Why the kernel rejected an action. The snake_case names are stable API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectCode {
    /// The line is not JSON, not an object, or lacks/misshapes
    /// `type`/`source`/`payload`/`actionId`/`at`.
    MalformedAction,
    /// The `type` names no registered action.
    UnknownActionType,
    /// The action type does not accept this source kind.
    SourceNotAllowed,
    /// A player source names a player who has not joined.
    UnknownPlayer,
    /// The payload has a key the action does not define (onlyKeys).
    UnknownKey,
    /// A required payload field is absent.
    MissingField,
    /// A payload field has the wrong JSON type.
    InvalidType,
    /// A number is NaN or infinite.
    NotFinite,
    /// A field has the right type but a value the action refuses
    /// (an empty id, a non-integer count, a malformed transform, …).
    InvalidValue,
    /// `system.game_start` arrived at a sequence other than zero.
    SequenceNotZero,
    /// `system.player_joined` named a player who is already present.
    PlayerExists,
    /// The payload names a player who is not present.
    PlayerNotFound,
    /// The payload names an entity that does not exist.
    EntityNotFound,
    /// `entity.spawn` names a prefab the game does not define.
    PrefabNotFound,
    /// A deal target names a player who has no hand container.
    NoHand,
    /// The payload names a stack that does not exist.
    StackNotFound,
    /// `stack.create` with an id that is already a stack.
    StackExists,
    /// The entity lacks the component the action needs.
    MissingComponent,
    /// The needed component exists but is disabled.
    ComponentDisabled,
    /// The entity is held by a player.
    AlreadyHeld,
    /// A drop by a player who does not hold the entity.
    NotHeld,
    /// The entity is locked.
    Locked,
    /// The entity is in a stack and is not its top.
    NotStackTop,
    /// A die is held by a different player than the actor.
    HeldByOther,
    /// Source and target container are the same entity.
    SameContainer,
    /// Two ids that must differ are equal (snap point and entity).
    SameEntity,
    /// `container.move`'s `from` does not match where the entity is.
    SourceMismatch,
    /// An insertion index beyond the target's length (or non-zero for the
    /// world).
    IndexOutOfRange,
    /// Moving a container into itself or into something it holds.
    ContainerCycle,
    /// A stack member that must be in the world is placed elsewhere.
    NotInWorld,
    /// An id listed twice where items must be unique.
    DuplicateItem,
    /// Fewer items than the action needs.
    TooFewItems,
    /// The entity is already attached to that snap point.
    AlreadyAttached,
    /// The snap point has tags and the entity shares none of them.
    TagMismatch,
    /// The deck has fewer cards than the draw needs.
    InsufficientCards,
    /// The target container lacks room for the whole operation.
    CapacityExceeded,
    /// A die has no usable faces.
    InvalidFaces,
    /// Arithmetic produced a non-finite number.
    NonFiniteResult,
    /// A text value is longer than 4,096 UTF-8 bytes.
    TextTooLong,
    /// `prompt.create` with the id of an existing prompt.
    PromptExists,
    /// The payload names a prompt that does not exist.
    PromptNotFound,
    /// The prompt was already answered or canceled.
    PromptClosed,
    /// A response from a player the prompt is not for.
    WrongPlayer,
    /// A response that does not fit the prompt (not a choice, not a boolean,
    /// outside min/max or off the step grid).
    InvalidResponse,
    /// `timer.register` with the id of an existing timer.
    TimerExists,
    /// The payload names a timer that does not exist.
    TimerNotFound,
    /// A creator guard (`can_grab`, `can_flip`, `can_press`, …) said no.
    GuardDenied,
    /// An event cascade exceeded the kernel's depth or subcommand bound.
    CascadeLimit,
    /// A script failed; a `script.error` event follows.
    ScriptError,
}

impl RejectCode {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectCode::MalformedAction => "malformed_action",
            RejectCode::UnknownActionType => "unknown_action_type",
            RejectCode::SourceNotAllowed => "source_not_allowed",
            RejectCode::UnknownPlayer => "unknown_player",
            RejectCode::UnknownKey => "unknown_key",
            RejectCode::MissingField => "missing_field",
            RejectCode::InvalidType => "invalid_type",
            RejectCode::NotFinite => "not_finite",
            RejectCode::InvalidValue => "invalid_value",
            RejectCode::SequenceNotZero => "sequence_not_zero",
            RejectCode::PlayerExists => "player_exists",
            RejectCode::PlayerNotFound => "player_not_found",
            RejectCode::EntityNotFound => "entity_not_found",
            RejectCode::PrefabNotFound => "prefab_not_found",
            RejectCode::NoHand => "no_hand",
            RejectCode::StackNotFound => "stack_not_found",
            RejectCode::StackExists => "stack_exists",
            RejectCode::MissingComponent => "missing_component",
            RejectCode::ComponentDisabled => "component_disabled",
            RejectCode::AlreadyHeld => "already_held",
            RejectCode::NotHeld => "not_held",
            RejectCode::Locked => "locked",
            RejectCode::NotStackTop => "not_stack_top",
            RejectCode::HeldByOther => "held_by_other",
            RejectCode::SameContainer => "same_container",
            RejectCode::SameEntity => "same_entity",
            RejectCode::SourceMismatch => "source_mismatch",
            RejectCode::IndexOutOfRange => "index_out_of_range",
            RejectCode::ContainerCycle => "container_cycle",
            RejectCode::NotInWorld => "not_in_world",
            RejectCode::DuplicateItem => "duplicate_item",
            RejectCode::TooFewItems => "too_few_items",
            RejectCode::AlreadyAttached => "already_attached",
            RejectCode::TagMismatch => "tag_mismatch",
            RejectCode::InsufficientCards => "insufficient_cards",
            RejectCode::CapacityExceeded => "capacity_exceeded",
            RejectCode::InvalidFaces => "invalid_faces",
            RejectCode::NonFiniteResult => "non_finite_result",
            RejectCode::TextTooLong => "text_too_long",
            RejectCode::PromptExists => "prompt_exists",
            RejectCode::PromptNotFound => "prompt_not_found",
            RejectCode::PromptClosed => "prompt_closed",
            RejectCode::WrongPlayer => "wrong_player",
            RejectCode::InvalidResponse => "invalid_response",
            RejectCode::TimerExists => "timer_exists",
            RejectCode::TimerNotFound => "timer_not_found",
            RejectCode::GuardDenied => "guard_denied",
            RejectCode::CascadeLimit => "cascade_limit",
            RejectCode::ScriptError => "script_error",
        }
    }
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
