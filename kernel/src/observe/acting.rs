//! A seated player names entities as its seat sees them
//! (docs/observations.md, Acting on what a seat sees).

use super::{Sight, Viewer};
use crate::action::{ActionType, PlayerRule, Sources};
use crate::id::Id;
use crate::payload::{FieldValue, Fields};
use crate::state::{Entity, State};
use crate::value::Value;

/// The payload keys through which a player names entities.
const NAMING_KEYS: &[&str] = &["deckId", "entityId", "items", "target", "targets"];

impl State {
    /// The seat a player sits in (the first in id order, if several).
    pub fn seat_of(&self, player: &str) -> Option<&Id> {
        self.seats
            .iter()
            .find(|(_, p)| p.as_deref() == Some(player))
            .map(|(s, _)| s)
    }

    /// A seated player's payload with every alias its seat was shown
    /// replaced by the entity's id (only for that seat). Naming by its id
    /// an entity the seat cannot place at all (inside another seat's
    /// private container or a hidden one) names nothing: the action is
    /// refused where, and as, it would be for an id that does not exist —
    /// a seat cannot probe hands or piles for cards. `None` when nothing
    /// needs changing.
    pub(crate) fn resolve_names(&self, payload: &Fields, viewer: &Viewer) -> Option<Fields> {
        let mut changed: Option<Fields> = None;
        for (key, value) in payload.iter() {
            if !NAMING_KEYS.contains(&key) {
                continue;
            }
            let resolved = match value {
                FieldValue::Str(name) => self
                    .resolve_name(name.as_str(), viewer)
                    .map(|id| FieldValue::from(&*id)),
                FieldValue::Json(list) => match &**list {
                    serde_json::Value::Array(items) => {
                        let mut out = Vec::with_capacity(items.len());
                        let mut any = false;
                        for item in items {
                            match item.as_str() {
                                Some(name) => match self.resolve_name(name, viewer) {
                                    Some(id) => {
                                        any = true;
                                        out.push(serde_json::Value::from(&*id));
                                    }
                                    None => out.push(item.clone()),
                                },
                                None => out.push(item.clone()),
                            }
                        }
                        any.then(|| FieldValue::Json(Box::new(serde_json::Value::Array(out))))
                    }
                    _ => None,
                },
                _ => None,
            };
            if let Some(v) = resolved {
                changed.get_or_insert_with(|| payload.clone()).set(key, v);
            }
        }
        changed
    }

    /// A player's hand: the first container, in id order, tagged `hand`
    /// whose `props.owner` is the player (where a deal to the player goes).
    pub fn hand_of(&self, player: &str) -> Option<&Entity> {
        self.entities_sorted().into_iter().find(|e| {
            e.components.container.is_some()
                && e.tags.binary_search(&"hand".to_owned()).is_ok()
                && e.props.get("owner") == Some(&Value::from(player))
        })
    }

    /// The entities a seat's payload acts on by name that `viewer` sees in
    /// full: those its naming keys name (a deal's target player stands for
    /// the player's hand), and the top piece of a stack `stackId` names.
    /// An alias, or the id of an entity the viewer cannot see as it is,
    /// names none here: what answers from this list tells the viewer
    /// nothing it does not see.
    pub fn named_in_full(&self, payload: &Fields, viewer: &Viewer) -> Vec<&Entity> {
        let mut out = Vec::new();
        let mut add = |name: &str| {
            let e = match self.entity(name) {
                Some(e) => Some(e),
                None if self.players.contains_key(name) => self.hand_of(name),
                None => None,
            };
            if let Some(e) = e.filter(|e| self.sight(e, viewer) == Sight::Known) {
                out.push(e);
            }
        };
        if let Some(FieldValue::Str(stack)) = payload.get("stackId") {
            let top = self.stacks.get(stack.as_str()).and_then(|s| s.items.last());
            if let Some(top) = top {
                add(top.as_ref());
            }
        }
        for key in NAMING_KEYS {
            match payload.get(key) {
                Some(FieldValue::Str(name)) => add(name.as_str()),
                Some(FieldValue::Json(list)) => {
                    if let serde_json::Value::Array(items) = &**list {
                        items.iter().filter_map(|i| i.as_str()).for_each(&mut add);
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Whether a player may submit an action of this type in this room
    /// (its registry row, and for the sandbox-only rows `settings.sandbox`).
    pub fn players_may_submit(&self, action_type: &str) -> bool {
        ActionType::from_name(action_type).is_some_and(|ty| {
            let sources = ty.sources();
            sources.allows_player(self.sandbox_for(sources))
        })
    }

    /// Whether the sandbox setting is on, for a registry row that depends
    /// on it (the setting is read only for those rows).
    pub(crate) fn sandbox_for(&self, sources: Sources) -> bool {
        sources.player == PlayerRule::Sandbox
            && self.settings.get("sandbox") == Some(&Value::Bool(true))
    }

    /// The name a seat's payload should carry for `name`: `None` to keep
    /// it as it is.
    fn resolve_name(&self, name: &str, viewer: &Viewer) -> Option<Id> {
        if let Some(e) = self.entity(name) {
            return match self.sight(e, viewer) {
                Sight::Known | Sight::Alias(_) => None,
                // Names nothing, and is refused where any missing id is.
                Sight::Unlisted => Some(Id::from(format!("{UNSEEN}{name}"))),
            };
        }
        if !(name.len() == 17 && name.starts_with('h')) {
            return None;
        }
        // Only face-down entities carry aliases; the rest cost one check.
        let found = self
            .entities_sorted()
            .into_iter()
            .filter(|e| e.components.flippable == Some(true))
            .find(|e| self.alias(e) == name && self.sight(e, viewer) == Sight::Alias(name.into()));
        found.map(|e| e.id.clone())
    }
}

/// Marks a name a seat may not use: no entity has it, and messages show
/// the name without it ([`shown_name`]).
const UNSEEN: char = '\u{1}';

/// A payload name as a rejection message shows it: as the seat sent it.
pub(crate) fn shown_name(name: &str) -> &str {
    name.strip_prefix(UNSEEN).unwrap_or(name)
}
