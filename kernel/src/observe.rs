//! What a viewer may see of the state (docs/observations.md): the one
//! projection every output path for a seat or a spectator goes through.
//! Deny by default: what is not named here as visible is left out.

use std::collections::BTreeMap;

use crate::canonical::entity_value;
use crate::entity::{Entity, Placement, Visibility};
use crate::id::Id;
use crate::state::State;
use crate::value::{object, Value};

/// Who is looking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Viewer {
    /// Everything: designers, tests, records, replays.
    Referee,
    /// Public information only.
    Spectator,
    /// What the player in this seat would see.
    Seat(Id),
}

impl Viewer {
    /// `referee`, `spectator`, or a seat id (`seat:<id>` names a seat
    /// whose id is `referee` or `spectator`).
    pub fn parse(text: &str) -> Viewer {
        match text {
            "referee" => Viewer::Referee,
            "spectator" => Viewer::Spectator,
            other => Viewer::Seat(Id::from(other.strip_prefix("seat:").unwrap_or(other))),
        }
    }

    fn seat(&self) -> Option<&Id> {
        match self {
            Viewer::Seat(s) => Some(s),
            _ => None,
        }
    }
}

/// How a viewer sees one entity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sight {
    /// Not at all: it is inside a container the viewer cannot look into.
    Unlisted,
    /// Where it is, but not what it is: under this alias.
    Alias(String),
    /// Fully, under its own id.
    Known,
}

/// The components an entity seen under an alias still shows: where it is
/// and how it can be handled, nothing of what it is.
const PHYSICAL: &[&str] = &[
    "flippable",
    "grabbable",
    "lockable",
    "stackable",
    "transform",
];

impl State {
    /// How `viewer` sees the entity `e`.
    pub fn sight(&self, e: &Entity, viewer: &Viewer) -> Sight {
        if *viewer == Viewer::Referee {
            return Sight::Known;
        }
        let mut own = false;
        let mut at = e.placement.clone();
        // Up through containers and snap points to the table (bounded: a
        // cycle is refused on load and by every move).
        for _ in 0..=self.entity_count() {
            let holder = match &at {
                Placement::Container(c) => {
                    let Some(ce) = self.entity(c) else {
                        return Sight::Unlisted;
                    };
                    let visibility = ce.components.container.as_ref().map(|k| &k.visibility);
                    match visibility {
                        Some(Visibility::Private(seat)) if viewer.seat() == Some(seat) => {
                            own = true
                        }
                        Some(Visibility::Private(_) | Visibility::Hidden) => {
                            return Sight::Unlisted
                        }
                        _ => {}
                    }
                    ce
                }
                Placement::Snap(s) => match self.entity(s) {
                    Some(se) => se,
                    None => return Sight::Unlisted,
                },
                Placement::World | Placement::Stack(_) => break,
            };
            at = holder.placement.clone();
        }
        let face_down = e.components.flippable == Some(true);
        if face_down && !own {
            Sight::Alias(self.alias(e))
        } else {
            Sight::Known
        }
    }

    /// The alias a viewer sees `e` under when it may not see what it is:
    /// derived from its id, its trips into hidden places and the room's
    /// secret, so it changes with every trip and cannot be worked out from
    /// the id.
    pub fn alias(&self, e: &Entity) -> String {
        let mut input = Vec::with_capacity(e.id.len() + 5);
        input.extend_from_slice(e.id.as_bytes());
        input.push(0);
        input.extend_from_slice(&e.trips.to_le_bytes());
        let hash = blake3::keyed_hash(&self.alias_key, &input);
        let mut out = String::from("h");
        crate::digest::write_hex(&hash.as_bytes()[..8], &mut out);
        out
    }

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
        Value::Object(doc)
    }

    /// A fully seen entity, with every id in it as the viewer sees it and
    /// every container it cannot look into shown as a count.
    fn known(&self, e: &Entity, viewer: &Viewer, shown: &dyn Fn(&Id) -> Option<String>) -> Value {
        let mut v = entity_value(e);
        let Value::Object(m) = &mut v else {
            return v;
        };
        m.remove("trips");
        let Some(Value::Object(comps)) = m.get_mut("components") else {
            return v;
        };
        if let Some(c) = &e.components.container {
            let open = match &c.visibility {
                Visibility::Public => true,
                Visibility::Private(seat) => viewer.seat() == Some(seat),
                Visibility::Hidden => false,
            };
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

    /// The prompts addressed to the player in the viewer's seat.
    fn own_prompts(&self, viewer: &Viewer) -> Value {
        let player = viewer
            .seat()
            .and_then(|s| self.seats.get(s))
            .and_then(Option::as_ref);
        let mine = self
            .prompts
            .iter()
            .filter(|(_, p)| Some(&p.player_id) == player)
            .map(|(id, p)| (id.to_string(), p.to_value()));
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
