//! What a viewer may see of the state (docs/observations.md): the one
//! projection every output path for a seat or a spectator goes through.
//! Deny by default: what is not named here as visible is left out.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::canonical::entity_value;
use crate::entity::{Entity, Exposure, Placement, Reveal, Visibility, Within};
use crate::event::{Event, EventKind, Field};
use crate::id::Id;
use crate::payload::{FieldValue, Fields};
use crate::records::PromptStatus;
use crate::reject::{RejectCode, Rejection};
use crate::state::State;
use crate::value::{object, write_string, Value};

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

impl Exposure {
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

    /// What a viewer needs to see `e` later, once it is gone.
    pub(crate) fn exposure(&self, e: &Entity) -> Exposure {
        Exposure {
            within: self.within(e),
            face_down: e.components.flippable == Some(true),
            revealed: e.secrecy.revealed.clone(),
            alias: self.alias(e),
        }
    }

    /// Up through containers and snap points to the table.
    fn within(&self, e: &Entity) -> Within {
        let mut within = Within::Table;
        let mut at = &e.placement;
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
                    // What has been revealed to this viewer, where it lies.
                    let revealed: Vec<Value> = c
                        .items
                        .iter()
                        .enumerate()
                        .filter_map(|(i, id)| {
                            let id = shown(id)?;
                            let index = Value::Number(crate::num::count_to_f64(i as u64));
                            Some(object([("index", index), ("id", Value::from(id))]))
                        })
                        .collect();
                    if !revealed.is_empty() {
                        k.insert("shown".into(), Value::Array(revealed));
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

    /// Writes `event` as `viewer` may see it — one JSONL line without the
    /// newline — judged against the state after the event's action
    /// (docs/observations.md, Events). Returns false, writing nothing,
    /// when the viewer gets none of it.
    pub fn write_event_for(&self, event: &Event, viewer: &Viewer, out: &mut String) -> bool {
        if *viewer == Viewer::Referee {
            event.write_json_line(out);
            return true;
        }
        let kind = &event.kind;
        match kind {
            EventKind::PromptCreated { player_id, .. }
            | EventKind::PromptResponded { player_id, .. }
            | EventKind::PromptCanceled { player_id, .. }
                if self.seated(viewer) != Some(player_id) =>
            {
                return false
            }
            EventKind::TimerRegistered { .. }
            | EventKind::TimerCanceled { .. }
            | EventKind::TimerFired { .. } => return false,
            _ => {}
        }
        // (key, whether it names entities, the value as seen)
        let mut data: Vec<(&'static str, bool, Shown<'_>)> = Vec::with_capacity(8);
        let mut unseen = false;
        kind.fields(&mut |key, field| {
            let names = kind.is_entity_key(key);
            let shown = match field {
                Field::Str(id) if names => {
                    let (shown, known) = self.shown_id(id, viewer);
                    unseen |= !known;
                    shown.map_or(Shown::Field(Field::Null), Shown::Text)
                }
                Field::Ids(ids) if names => Shown::Ids(
                    ids.iter()
                        .map(|id| {
                            let (shown, known) = self.shown_id(id, viewer);
                            unseen |= !known;
                            shown
                        })
                        .collect(),
                ),
                other => Shown::Field(other),
            };
            data.push((key, names, shown));
        });
        for (key, names, shown) in &mut data {
            let keep = match kind {
                EventKind::ActionRejected { rejection, .. } => match *key {
                    "actionType" | "code" => true,
                    "message" if rejection.code != RejectCode::ScriptError => {
                        *shown = Shown::Text(Cow::Owned(self.scrub(&rejection.message, viewer)));
                        true
                    }
                    _ => false,
                },
                EventKind::ScriptError { .. } => {
                    matches!(*key, "scriptId" | "function" | "kind" | "sequence")
                }
                _ => *names || !unseen || PHYSICAL_KEYS.contains(key),
            };
            if !keep {
                *shown = Shown::Field(Field::Null);
            }
        }
        write_line(event, &mut data, out);
        true
    }

    /// An entity id as `viewer` sees it (its id, its alias, or nothing),
    /// and whether it sees the entity fully.
    fn shown_id<'a>(&self, id: &'a str, viewer: &Viewer) -> (Option<Cow<'a, str>>, bool) {
        match self.sight_of(id, viewer) {
            Some(Sight::Known) => (Some(Cow::Borrowed(id)), true),
            Some(Sight::Alias(a)) => (Some(Cow::Owned(a)), false),
            Some(Sight::Unlisted) | None => (None, false),
        }
    }

    /// A message with every word that is the id of an entity `viewer`
    /// does not fully see replaced by its alias, or by `?`.
    fn scrub(&self, message: &str, viewer: &Viewer) -> String {
        let mut out = String::with_capacity(message.len());
        let mut rest = message;
        while let Some(start) = rest.find(|c: char| !is_separator(c)) {
            out.push_str(&rest[..start]);
            rest = &rest[start..];
            let end = rest.find(is_separator).unwrap_or(rest.len());
            let word = &rest[..end];
            match self.sight_of(word, viewer) {
                Some(Sight::Known) | None => out.push_str(word),
                Some(Sight::Alias(a)) => out.push_str(&a),
                Some(Sight::Unlisted) => out.push('?'),
            }
            rest = &rest[end..];
        }
        out.push_str(rest);
        out
    }

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
    /// private container or a hidden one) is refused exactly as an id that
    /// names nothing: a seat cannot probe hands or piles for cards. `None`
    /// when nothing needs changing.
    pub(crate) fn resolve_names(
        &self,
        payload: &Fields,
        viewer: &Viewer,
    ) -> Result<Option<Fields>, Rejection> {
        let mut changed: Option<Fields> = None;
        for (key, value) in payload.iter() {
            if !NAMING_KEYS.contains(&key) {
                continue;
            }
            let resolved = match value {
                FieldValue::Str(name) => self
                    .resolve_name(key, name.as_str(), viewer)?
                    .map(|id| FieldValue::from(&*id)),
                FieldValue::Json(list) => match &**list {
                    serde_json::Value::Array(items) => {
                        let mut out = Vec::with_capacity(items.len());
                        let mut any = false;
                        for item in items {
                            match item.as_str() {
                                Some(name) => match self.resolve_name(key, name, viewer)? {
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
        Ok(changed)
    }

    /// The entity a seat means by `name`: `None` to keep the name as it is.
    fn resolve_name(
        &self,
        key: &str,
        name: &str,
        viewer: &Viewer,
    ) -> Result<Option<Id>, Rejection> {
        if let Some(e) = self.entity(name) {
            return match self.sight(e, viewer) {
                Sight::Known | Sight::Alias(_) => Ok(None),
                Sight::Unlisted => Err(Rejection::new(
                    RejectCode::EntityNotFound,
                    format!("payload.{key}: no entity \"{name}\""),
                )),
            };
        }
        if !(name.len() == 17 && name.starts_with('h')) {
            return Ok(None);
        }
        // Only face-down entities carry aliases; the rest cost one check.
        let found = self
            .entities_sorted()
            .into_iter()
            .filter(|e| e.components.flippable == Some(true))
            .find(|e| self.alias(e) == name && self.sight(e, viewer) == Sight::Alias(name.into()));
        Ok(found.map(|e| e.id.clone()))
    }

    /// The player sitting in the viewer's seat.
    fn seated(&self, viewer: &Viewer) -> Option<&Id> {
        viewer
            .seat()
            .and_then(|s| self.seats.get(s))
            .and_then(Option::as_ref)
    }

    /// The hash a viewer gets in place of the state hash: blake3 of the
    /// canonical JSON of its projection, without `sequence`.
    pub fn projected_hash(&self, viewer: &Viewer) -> String {
        if *viewer == Viewer::Referee {
            return self.hash();
        }
        view_hash(&self.project(viewer))
    }

    /// The open prompts addressed to the player in the viewer's seat (an
    /// answered or canceled one is history: its question was the seat's
    /// to see then, not necessarily now).
    fn own_prompts(&self, viewer: &Viewer) -> Value {
        let player = self.seated(viewer);
        let mine = self
            .prompts
            .iter()
            .filter(|(_, p)| Some(&p.player_id) == player && p.status == PromptStatus::Open)
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

/// One event line with the data as seen, keys in canonical order.
fn write_line(event: &Event, data: &mut [(&'static str, bool, Shown<'_>)], out: &mut String) {
    data.sort_unstable_by(|a, b| a.0.cmp(b.0));
    event.write_head(out);
    out.push('{');
    for (i, (key, _, shown)) in data.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(key, out);
        out.push(':');
        shown.write(out);
    }
    out.push_str("}}");
}

/// The payload keys through which a player names entities.
const NAMING_KEYS: &[&str] = &["deckId", "entityId", "target", "targets"];

/// Plain data keys an event keeps when it names an entity the viewer does
/// not fully see: who acted, where and how things moved — nothing of what
/// the thing is. Deny by default: every other plain key is null then.
const PHYSICAL_KEYS: &[&str] = &[
    "cardsEach",
    "flipped",
    "fromIndex",
    "index",
    "owner",
    "playerId",
    "seats",
    "stackId",
    "visibility",
];

/// Splits words in a message: ids are written between quotes or spaces,
/// and may end a clause.
fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\'' | '`' | ',' | ';' | '(' | ')' | '[' | ']' | '{' | '}'
        )
}

/// An event data value as a viewer sees it.
enum Shown<'a> {
    Field(Field<'a>),
    Text(Cow<'a, str>),
    Ids(Vec<Option<Cow<'a, str>>>),
}

impl Shown<'_> {
    fn write(&self, out: &mut String) {
        match self {
            Shown::Field(f) => f.write_canonical(out),
            Shown::Text(t) => write_string(t, out),
            Shown::Ids(ids) => {
                out.push('[');
                for (i, id) in ids.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    match id {
                        Some(id) => write_string(id, out),
                        None => out.push_str("null"),
                    }
                }
                out.push(']');
            }
        }
    }
}
