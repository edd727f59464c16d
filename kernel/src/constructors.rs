//! Typed constructors for the actions a Rust embedder issues most, so
//! driving the kernel from code does not mean building JSON: each builds
//! exactly the action its JSON envelope would (tested against
//! `Action::from_json`), without a `serde_json::Value` in between.
//!
//! ```
//! use digipology_kernel::{Action, Source};
//! let a = Action::counter_add(Source::player("p1"), "score", 2.0);
//! assert_eq!(a.action_type.as_str(), "counter.add");
//! ```

use crate::action::{Action, ActionType, Source};
use crate::payload::Fields;
use crate::state::Id;

impl Source {
    /// A player source.
    pub fn player(player_id: &str) -> Source {
        Source::Player {
            player_id: Id::from(player_id),
        }
    }

    /// The room host.
    pub fn system() -> Source {
        Source::System
    }

    /// A script binding (as a handler's subcommands are issued).
    pub fn script(script_id: &str, binding_id: &str) -> Source {
        Source::Script {
            script_id: Id::from(script_id),
            binding_id: Id::from(binding_id),
        }
    }
}

/// An action on one entity, named under `entityId`.
fn on_entity(ty: ActionType, source: Source, entity_id: &str) -> Action {
    Action::with_fields(ty, source, Fields::new().with("entityId", entity_id))
}

impl Action {
    /// `counter.add`: `amount` added to counter `entity_id`.
    pub fn counter_add(source: Source, entity_id: &str, amount: f64) -> Action {
        let mut a = on_entity(ActionType::CounterAdd, source, entity_id);
        a.payload.set("amount", amount);
        a
    }

    /// `counter.set`: counter `entity_id` set to `value`.
    pub fn counter_set(source: Source, entity_id: &str, value: f64) -> Action {
        let mut a = on_entity(ActionType::CounterSet, source, entity_id);
        a.payload.set("value", value);
        a
    }

    /// `entity.flip`.
    pub fn entity_flip(source: Source, entity_id: &str) -> Action {
        on_entity(ActionType::EntityFlip, source, entity_id)
    }

    /// `entity.grab`.
    pub fn entity_grab(source: Source, entity_id: &str) -> Action {
        on_entity(ActionType::EntityGrab, source, entity_id)
    }

    /// `button.press`.
    pub fn button_press(source: Source, entity_id: &str) -> Action {
        on_entity(ActionType::ButtonPress, source, entity_id)
    }

    /// `die.roll`.
    pub fn die_roll(source: Source, entity_id: &str) -> Action {
        on_entity(ActionType::DieRoll, source, entity_id)
    }

    /// `text.set`: text `entity_id` set to `value`.
    pub fn text_set(source: Source, entity_id: &str, value: &str) -> Action {
        let mut a = on_entity(ActionType::TextSet, source, entity_id);
        a.payload.set("value", value);
        a
    }

    /// `deck.shuffle`.
    pub fn deck_shuffle(source: Source, deck_id: &str) -> Action {
        Action::with_fields(
            ActionType::DeckShuffle,
            source,
            Fields::new().with("deckId", deck_id),
        )
    }

    /// `deck.draw_to_container`: `count` cards from `deck_id` into `target`.
    pub fn deck_draw_to_container(
        source: Source,
        deck_id: &str,
        target: &str,
        count: u32,
    ) -> Action {
        Action::with_fields(
            ActionType::DeckDrawToContainer,
            source,
            Fields::new()
                .with("deckId", deck_id)
                .with("target", target)
                .with("count", f64::from(count)),
        )
    }

    /// `system.game_start` (no settings override).
    pub fn game_start() -> Action {
        Action::with_fields(ActionType::GameStart, Source::System, Fields::new())
    }

    /// `system.player_joined`, with a display name when given.
    pub fn player_joined(player_id: &str, name: Option<&str>) -> Action {
        let mut payload = Fields::new().with("playerId", player_id);
        if let Some(n) = name {
            payload.set("name", n);
        }
        Action::with_fields(ActionType::PlayerJoined, Source::System, payload)
    }

    /// Sets the caller's action id (the kernel assigns `a<sequence>`
    /// without one).
    pub fn with_id(mut self, action_id: &str) -> Action {
        self.action_id = Some(Id::from(action_id));
        self
    }
}
