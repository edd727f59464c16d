//! The state as a viewer may see it (docs/observations.md, The state a
//! viewer sees).

use std::collections::BTreeMap;

use super::text::Reader;
use super::{opens, Sight, Viewer};
use crate::canonical::entity_value;
use crate::entity::Entity;
use crate::id::Id;
use crate::records::PromptStatus;
use crate::state::State;
use crate::value::{object, Value};

/// The components an entity seen under an alias still shows: where it is
/// and how it can be handled, nothing of what it is.
const PHYSICAL: &[&str] = &[
    "flippable",
    "grabbable",
    "lockable",
    "stackable",
    "transform",
];

/// The parts of a known entity's components the game wrote freely (its
/// tags and props too): a text, a die's faces and face, a snap point's
/// tags. Read as docs/observations.md, Text a game writes, says; the rest
/// is the kernel's (numbers, flags, names from a fixed list, ids shown as
/// seen).
const GAME_TEXT: &[(&str, &str)] = &[
    ("text", "value"),
    ("die", "faces"),
    ("die", "value"),
    ("snap_point", "tags"),
];

impl State {
    /// The state as `viewer` may see it (docs/observations.md): for the
    /// referee the whole canonical document; for a seat or a spectator the
    /// public table, what the seat owns, and nothing else.
    pub fn project(&self, viewer: &Viewer) -> Value {
        if *viewer == Viewer::Referee {
            return self.to_value(true);
        }
        let all = self.entities_sorted();
        let sights: BTreeMap<&Id, Sight> =
            all.iter().map(|e| (&e.id, self.sight(e, viewer))).collect();
        let shown = |id: &Id| match sights.get(id) {
            Some(Sight::Known) => Some(id.to_string()),
            Some(Sight::Alias(a)) => Some(a.clone()),
            _ => None,
        };
        let mut entities = BTreeMap::new();
        for e in &all {
            match &sights[&e.id] {
                Sight::Unlisted => {}
                Sight::Alias(a) => {
                    entities.insert(a.clone(), aliased(e, a));
                }
                Sight::Known => {
                    entities.insert(e.id.to_string(), self.known(e, viewer, &shown));
                }
            }
        }
        let stacks = self
            .stacks
            .iter()
            .map(|(id, s)| {
                let items = s.items.iter().filter_map(&shown).map(Value::from);
                (
                    id.to_string(),
                    object([("items", Value::Array(items.collect()))]),
                )
            })
            .collect();
        // Never `rng`, `storage` or `timers`.
        let mut doc = self.public_sections(true);
        doc.insert("entities".into(), Value::Object(entities));
        doc.insert("stacks".into(), Value::Object(stacks));
        doc.insert("prompts".into(), self.own_prompts(viewer));
        // The game's own view replaces this (docs/observations.md).
        doc.insert("view".into(), Value::Null);
        Value::Object(doc)
    }

    /// A fully seen entity, with every id in it as the viewer sees it and
    /// every container it cannot look into shown as a count.
    fn known(&self, e: &Entity, viewer: &Viewer, shown: &dyn Fn(&Id) -> Option<String>) -> Value {
        let mut v = entity_value(e);
        let Value::Object(m) = &mut v else {
            return v;
        };
        m.remove("trip");
        m.remove("revealedTo");
        // What the game wrote on it names hidden entities as the viewer
        // sees them (the ids inside, below, are shown as seen anyway).
        let reader = Reader::new(self, viewer, None);
        for key in ["tags", "props"] {
            if let Some(x) = m.get_mut(key) {
                reader.value(x);
            }
        }
        let Some(Value::Object(comps)) = m.get_mut("components") else {
            return v;
        };
        for (component, key) in GAME_TEXT {
            if let Some(Value::Object(c)) = comps.get_mut(*component) {
                if let Some(x) = c.get_mut(*key) {
                    reader.value(x);
                }
            }
        }
        if let Some(c) = &e.components.container {
            // Open to the viewer when its items lie where the viewer sees
            // (a container revealed to it inside another's hand is not).
            let open = self.inside(e).is_some_and(|w| opens(&w, viewer));
            if let Some(Value::Object(k)) = comps.get_mut("container") {
                if open {
                    let items = c.items.iter().filter_map(shown).map(Value::from);
                    k.insert("items".into(), Value::Array(items.collect()));
                } else {
                    k.remove("items");
                    k.insert(
                        "count".into(),
                        Value::Number(crate::num::count_to_f64(c.items.len() as u64)),
                    );
                    // What has been revealed to this viewer, but not where
                    // it lies: `index` null, sorted as seen (a position, or
                    // the real order, would tell of the items it does not
                    // see, or of how the owner keeps them).
                    // API 2 and earlier showed each revealed item's place,
                    // in the container's order (docs/lua-api.md, API
                    // versions).
                    let with_places = self.api_version < 3;
                    let mut list: Vec<(Option<usize>, String)> = c
                        .items
                        .iter()
                        .enumerate()
                        .filter_map(|(i, id)| Some((with_places.then_some(i), shown(id)?)))
                        .collect();
                    if !with_places {
                        list.sort_unstable_by(|a, b| a.1.cmp(&b.1));
                    }
                    if !list.is_empty() {
                        let list = list
                            .into_iter()
                            .map(|(i, id)| {
                                let index = match i {
                                    Some(i) => Value::Number(crate::num::count_to_f64(i as u64)),
                                    None => Value::Null,
                                };
                                object([("index", index), ("id", Value::from(id))])
                            })
                            .collect();
                        k.insert("shown".into(), Value::Array(list));
                    }
                }
            }
        }
        // Sets of ids: as seen, and sorted as seen (the real ids' order
        // would tell something about an alias).
        let as_seen = |ids: &[Id]| {
            let mut list: Vec<String> = ids.iter().filter_map(shown).collect();
            list.sort_unstable();
            Value::Array(list.into_iter().map(Value::from).collect())
        };
        if let (Some(s), Some(Value::Object(k))) =
            (&e.components.snap_point, comps.get_mut("snap_point"))
        {
            k.insert("attached".into(), as_seen(&s.attached));
        }
        if let (Some(z), Some(Value::Object(k))) = (&e.components.zone, comps.get_mut("zone")) {
            k.insert("members".into(), as_seen(&z.members));
        }
        v
    }

    /// The open prompts addressed to the player in the viewer's seat (an
    /// answered or canceled one is history: its question was the seat's
    /// to see then, not necessarily now), with the game's text in them —
    /// question, choices, default — naming entities as the seat sees them.
    fn own_prompts(&self, viewer: &Viewer) -> Value {
        let player = self.seated(viewer);
        let reader = Reader::new(self, viewer, None);
        let mine = self
            .prompts
            .iter()
            .filter(|(_, p)| Some(&p.player_id) == player && p.status == PromptStatus::Open)
            .map(|(id, p)| {
                let mut v = p.to_value();
                if let Value::Object(m) = &mut v {
                    for key in ["title", "choices", "default", "response"] {
                        if let Some(x) = m.get_mut(key) {
                            reader.value(x);
                        }
                    }
                }
                (id.to_string(), v)
            });
        Value::Object(mine.collect())
    }
}

/// An entity seen under an alias: its alias, who holds it, and its
/// physical components only.
fn aliased(e: &Entity, alias: &str) -> Value {
    let Value::Object(full) = entity_value(e) else {
        return Value::Null;
    };
    let components = match full.get("components") {
        Some(Value::Object(c)) => c
            .iter()
            .filter(|(k, _)| PHYSICAL.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        _ => BTreeMap::new(),
    };
    object([
        ("id", Value::from(alias)),
        ("heldBy", Value::from(e.held_by.as_deref())),
        ("components", Value::Object(components)),
    ])
}
