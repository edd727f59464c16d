//! What a viewer may see (docs/observations.md): viewers, how a viewer
//! sees one entity (its sight) and the aliases hidden things go under.
//! Built on it, one projection per output — the state (`state.rs`), each
//! event (`events.rs`) — the one rule for text a viewer reads, the
//! game's and the kernel's messages (`text.rs`), and how a seated player
//! names what it sees (`acting.rs`). Deny by default: what is not named
//! as visible is left out.

mod acting;
pub(crate) use acting::shown_name;
mod events;
mod state;
mod text;

use crate::entity::{Entity, Exposure, Placement, Reveal, Visibility, Within};
use crate::event::{Event, EventKind, Field};
use crate::id::Id;
use crate::state::State;
use crate::value::Value;

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

    /// The seat, for a seat's viewer.
    pub fn seat(&self) -> Option<&Id> {
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

impl Exposure {
    /// On the table, face up, revealed to nobody, and — for a container —
    /// open to everyone: everyone sees it and, if it holds items, where
    /// they lie.
    pub(crate) fn plain(&self) -> bool {
        self.within == Within::Table
            && !self.face_down
            && self.revealed == Reveal::Nobody
            && self.inside.as_ref().is_none_or(|w| *w == Within::Table)
    }

    /// How `viewer` sees it.
    pub fn sight(&self, viewer: &Viewer) -> Sight {
        see(&self.within, self.face_down, &self.revealed, viewer, || {
            self.alias.clone()
        })
    }
}

/// The one rule: the referee sees all; a reveal shows an entity to its
/// seats; a hidden place or another seat's private one shows nothing; a
/// face-down card outside the viewer's own private place shows an alias.
fn see(
    within: &Within,
    face_down: bool,
    revealed: &Reveal,
    viewer: &Viewer,
    alias: impl FnOnce() -> String,
) -> Sight {
    let seat = match viewer {
        Viewer::Referee => return Sight::Known,
        Viewer::Spectator => None,
        Viewer::Seat(s) => Some(s),
    };
    if revealed.shows(seat) {
        return Sight::Known;
    }
    match within {
        Within::Hidden => Sight::Unlisted,
        Within::Private(owner) if seat != Some(owner) => Sight::Unlisted,
        Within::Private(_) => Sight::Known,
        Within::Table if face_down => Sight::Alias(alias()),
        Within::Table => Sight::Known,
    }
}

/// Whether items lying `inside` (a container's items: see
/// [`State::inside`]) are open to `viewer`: which they are and where they
/// lie. A reveal shows an item, never where it lies.
pub(crate) fn opens(inside: &Within, viewer: &Viewer) -> bool {
    match (inside, viewer) {
        (_, Viewer::Referee) | (Within::Table, _) => true,
        (Within::Private(owner), Viewer::Seat(s)) => owner == s,
        _ => false,
    }
}

impl State {
    /// How `viewer` sees the entity `e`.
    pub fn sight(&self, e: &Entity, viewer: &Viewer) -> Sight {
        if *viewer == Viewer::Referee {
            return Sight::Known;
        }
        let face_down = e.components.flippable == Some(true);
        see(
            &self.within(e),
            face_down,
            &e.secrecy.revealed,
            viewer,
            || self.alias(e),
        )
    }

    /// How `viewer` sees the entity with this id, live or destroyed by the
    /// last action (`None`: no such entity).
    pub fn sight_of(&self, id: &str, viewer: &Viewer) -> Option<Sight> {
        match self.entity(id) {
            Some(e) => Some(self.sight(e, viewer)),
            None => self
                .gone
                .iter()
                .find(|(g, _)| **g == *id)
                .map(|(_, x)| x.sight(viewer)),
        }
    }

    /// How `e` can be seen now, kept for later: by the events that name it
    /// (judged as they happened) and, once it is gone, its own.
    pub(crate) fn exposure(&self, e: &Entity) -> Exposure {
        let within = self.within(e);
        let face_down = e.components.flippable == Some(true);
        let alias = if face_down && within == Within::Table {
            self.alias(e)
        } else {
            String::new()
        };
        Exposure {
            within,
            face_down,
            revealed: e.secrecy.revealed.clone(),
            alias,
            inside: self.inside(e),
        }
    }

    /// For a container, where its items lie (`None` for an entity that is
    /// no container): what decides who sees which items it holds and
    /// where they lie.
    pub(crate) fn inside(&self, c: &Entity) -> Option<Within> {
        c.components.container.as_ref()?;
        Some(self.within_at(&Placement::Container(c.id.clone())))
    }

    /// Whether `viewer` sees into the container `id` — which items it
    /// holds and where they lie — now (`false`: no such container, live
    /// or destroyed by the last action). A viewer who cannot is shown no
    /// position inside it (docs/observations.md, Positions).
    pub fn sees_into(&self, id: &str, viewer: &Viewer) -> bool {
        let inside = match self.entity(id) {
            Some(e) => self.inside(e),
            None => self
                .gone
                .iter()
                .find(|(g, _)| **g == *id)
                .and_then(|(_, x)| x.inside.clone()),
        };
        inside.is_some_and(|w| opens(&w, viewer))
    }

    /// Fixes how `event` is seen to how its entities can be seen now, if it
    /// does not say already: for events kept past their action (docs/
    /// observations.md), which would otherwise be judged by a later state.
    pub fn pin_sight(&self, event: &mut Event) {
        if event.seen.is_none() {
            event.seen = Some(self.seen_in(&event.kind));
        }
    }

    /// The entities an event names — in its entity keys, or in its text
    /// (`text.rs`) — that are not in plain sight of everyone right now,
    /// with how they can be seen (the rest every viewer sees).
    pub(crate) fn seen_in(&self, kind: &EventKind) -> Vec<(Id, Exposure)> {
        let mut seen: Vec<(Id, Exposure)> = Vec::new();
        let mut look = |id: &str| {
            let exposure = match self.entity(id) {
                Some(e) => self.exposure(e),
                None => match self.gone.iter().find(|(g, _)| **g == *id) {
                    Some((_, x)) => x.clone(),
                    None => return,
                },
            };
            if !exposure.plain() && !seen.iter().any(|(s, _)| **s == *id) {
                seen.push((Id::from(id), exposure));
            }
        };
        // Visiting the fields builds nothing: a table in plain sight costs
        // a lookup per id and no allocation.
        kind.fields(&mut |key, field| match field {
            Field::Str(id) if kind.is_entity_key(key) => look(id),
            Field::Ids(ids) if kind.is_entity_key(key) => ids.iter().for_each(|id| look(id)),
            // The ids its text names are judged as it happened too.
            Field::Str(text) if text::is_text_key(kind, key) => self.ids_in(text, &mut look),
            Field::Value(v) if text::is_text_key(kind, key) => self.ids_in_value(v, &mut look),
            _ => {}
        });
        seen
    }

    /// Up through containers and snap points to the table.
    pub(crate) fn within(&self, e: &Entity) -> Within {
        self.within_at(&e.placement)
    }

    /// [`State::within`] for an entity placed at `placement`.
    fn within_at(&self, placement: &Placement) -> Within {
        let mut within = Within::Table;
        let mut at = placement;
        // Bounded: a cycle is refused on load and by every move.
        for _ in 0..=self.entity_count() {
            let holder = match at {
                Placement::Container(c) => {
                    let Some(ce) = self.entity(c) else {
                        return Within::Hidden;
                    };
                    let visibility = ce.components.container.as_ref().map(|k| &k.visibility);
                    match (visibility, &within) {
                        (Some(Visibility::Hidden), _) => return Within::Hidden,
                        (Some(Visibility::Private(s)), Within::Private(o)) if s != o => {
                            return Within::Hidden
                        }
                        (Some(Visibility::Private(s)), _) => within = Within::Private(s.clone()),
                        _ => {}
                    }
                    ce
                }
                Placement::Snap(s) => match self.entity(s) {
                    Some(se) => se,
                    None => return Within::Hidden,
                },
                Placement::World | Placement::Stack(_) => break,
            };
            at = &holder.placement;
        }
        within
    }

    /// The alias a viewer sees `e` under when it may not see what it is:
    /// keyed with the room's secret, over the moment of its last trip into
    /// a hidden place (which every seat saw, so the alias says nothing of
    /// which card it is) or, if it never made one, over its id. It changes
    /// with every trip and cannot be worked out without the secret.
    pub fn alias(&self, e: &Entity) -> String {
        let mut h = blake3::Hasher::new_keyed(&self.alias_key);
        match e.secrecy.trip {
            Some(t) => {
                h.update(&[1]);
                h.update(&t.at.to_le_bytes());
                h.update(&t.n.to_le_bytes());
            }
            None => {
                h.update(&[0]);
                h.update(e.id.as_bytes());
            }
        }
        let mut out = String::from("h");
        crate::digest::write_hex(&h.finalize().as_bytes()[..8], &mut out);
        out
    }

    /// The player sitting in the viewer's seat.
    pub(crate) fn seated(&self, viewer: &Viewer) -> Option<&Id> {
        viewer
            .seat()
            .and_then(|s| self.seats.get(s))
            .and_then(Option::as_ref)
    }
}

/// The hash of a viewer's document: blake3 of its canonical JSON without
/// `sequence` (so it changes with what the viewer sees, not with actions
/// that change nothing for it).
pub fn view_hash(doc: &Value) -> String {
    let mut text = String::new();
    match doc {
        Value::Object(m) => {
            let mut m = m.clone();
            m.remove("sequence");
            Value::Object(m).write_canonical(&mut text);
        }
        other => other.write_canonical(&mut text),
    }
    blake3::hash(text.as_bytes()).to_hex().to_string()
}
