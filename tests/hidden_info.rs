//! Hidden information, end to end through `examples/peek-and-play` and
//! every output a seat gets (docs/observations.md):
//!
//! - twin worlds: two deals that differ only in cards seat S cannot see,
//!   played with the same public actions, give S (and a spectator)
//!   byte-identical observations — events, rejections, errors, state and
//!   view hash — until one of those cards legitimately comes into view;
//! - following a card: after a card goes back into the shuffled pile, no
//!   seat can tell which pile position or later draw it is;
//! - a canary: a marker in every card's props, put by the game into prompt
//!   titles and script errors too, reaches no viewer who may not see it;
//!   and no card's id either, though the game's own text — prompts, the
//!   status text, its views, its legal actions, a guard's reason — names
//!   every card (docs/observations.md, Text a game writes).

mod common;

use std::path::{Path, PathBuf};

use common::*;
use digipology_kernel::{EventKind, RejectCode, Sight, Viewer};
use digipology_room::package::{self, Package};
use digipology_room::room::Room;
use serde_json::{json, Value};

const SEATS: [(&str, &str); 2] = [("north", "ann"), ("south", "bob")];

fn player_of(seat: &str) -> &'static str {
    if seat == "north" {
        "ann"
    } else {
        "bob"
    }
}

/// A small deterministic random source for the playouts.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % n.max(1) as u64).unwrap_or(0)
    }
}

/// A started room of `game` with ann in north and bob in south.
fn started(game: &Path, seed: u64) -> Room {
    let package = Package::load(game).expect("game loads");
    let mut room = package::build_room(&package, seed, (None, None)).expect("room");
    room.keep_events();
    let mut sink = Vec::new();
    room.start_with(json!({"turns": 40, "handSize": 3}), &mut sink)
        .expect("start");
    let players: Vec<String> = SEATS.iter().map(|(_, p)| (*p).to_owned()).collect();
    room.seat_players(&players, &package.seats(), &mut sink)
        .expect("seat");
    room.take_events();
    room
}

/// The room from a save game text.
fn resumed(game: &Path, save: &str, name: &str) -> Room {
    let path = scratch(&format!("hidden-{name}")).join("save.json");
    std::fs::write(&path, save).expect("write save");
    let package = Package::load(game).expect("game loads");
    let mut room = package::resume_room(&package, &path, (None, None)).expect("resumes");
    room.keep_events();
    room
}

/// `x` and `y` trade places: each takes the other's place, trip, reveals
/// and face — everything but what it is (id, props, tags) — and every
/// mention of one where it lies now (container lists, the open prompt
/// offering to play it) becomes the other. Past prompts stay: what a seat
/// held before is its memory, the same in both worlds.
fn swap_places(save: &str, x: &str, y: &str) -> String {
    let mut doc: Value = serde_json::from_str(save).expect("save JSON");
    let entities = &mut doc["state"]["entities"];
    let (mut ex, mut ey) = (entities[x].take(), entities[y].take());
    for key in ["components", "heldBy", "trip", "revealedTo"] {
        let (a, b) = (ex.get(key).cloned(), ey.get(key).cloned());
        for (rec, val) in [(&mut ex, b), (&mut ey, a)] {
            if let Some(m) = rec.as_object_mut() {
                match val {
                    Some(v) => m.insert(key.to_owned(), v),
                    None => m.remove(key),
                };
            }
        }
    }
    let state = &mut doc["state"];
    state["entities"] = swap_strings(state["entities"].take(), x, y);
    if let Some(prompts) = state["prompts"].as_object_mut() {
        for p in prompts.values_mut().filter(|p| p["status"] == "open") {
            *p = swap_strings(p.take(), x, y);
        }
    }
    state["entities"][x] = ex;
    state["entities"][y] = ey;
    doc.to_string()
}

/// Every string `x` or `play:x` becomes `y` / `play:y`, and back.
fn swap_strings(v: Value, x: &str, y: &str) -> Value {
    match v {
        Value::String(s) => {
            let (px, py) = (format!("play:{x}"), format!("play:{y}"));
            Value::String(match s.as_str() {
                s if s == x => y.to_owned(),
                s if s == y => x.to_owned(),
                s if s == px => py,
                s if s == py => px,
                _ => s,
            })
        }
        Value::Array(a) => Value::Array(a.into_iter().map(|v| swap_strings(v, x, y)).collect()),
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (k, swap_strings(v, x, y)))
                .collect(),
        ),
        other => other,
    }
}

/// Submits one action; its events.
fn act(room: &mut Room, action: &Value) -> Vec<digipology_kernel::Event> {
    room.submit_json(action.clone(), &mut Vec::new())
        .expect("submit");
    room.take_events()
}

/// Everything `viewer` gets from one action: its events, the state, the
/// view hash and the observation (legal actions included), as it sees them.
fn observation(room: &mut Room, events: &[digipology_kernel::Event], viewer: &Viewer) -> String {
    let mut out = String::new();
    for e in events {
        let mut line = String::new();
        if room.kernel().state().write_event_for(e, viewer, &mut line) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    // A guard's reason, as the server's answer to the seat's own attempt
    // carries it (read here for every viewer, as if each had tried).
    for e in events {
        if let EventKind::ActionRejected { rejection, .. } = &e.kind {
            if rejection.code == RejectCode::GuardDenied {
                out.push_str(&room.kernel().state().scrub_text(&rejection.message, viewer));
                out.push('\n');
            }
        }
    }
    let doc = room.observe(viewer);
    out.push_str(&doc.to_canonical_json());
    out.push('\n');
    out.push_str(&digipology_kernel::observe::view_hash(&doc));
    // The observation as a program gets it (docs/match.md): its legal
    // actions are found by dry runs, which must not tell hidden things
    // apart either.
    out.push('\n');
    out.push_str(&room.observation(viewer).to_string());
    out
}

fn known(room: &Room, id: &str, viewer: &Viewer) -> bool {
    room.kernel().state().sight_of(id, viewer) == Some(Sight::Known)
}

/// The open prompt of the player in `seat`, as that seat sees it.
fn open_prompt(room: &Room, seat: &str) -> Option<(String, Vec<String>)> {
    let doc = room.kernel().state().project(&Viewer::Seat(seat.into()));
    let Some(digipology_kernel::Value::Object(prompts)) = object_get(&doc, "prompts") else {
        return None;
    };
    prompts.iter().find_map(|(id, p)| {
        let p: Value = serde_json::from_str(&p.to_canonical_json()).ok()?;
        (p["status"] == "open").then(|| {
            let choices = p["choices"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|c| c.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            (id.clone(), choices)
        })
    })
}

fn object_get<'a>(
    v: &'a digipology_kernel::Value,
    key: &str,
) -> Option<&'a digipology_kernel::Value> {
    match v {
        digipology_kernel::Value::Object(m) => m.get(key),
        _ => None,
    }
}

fn respond(seat: &str, prompt: &str, answer: &str) -> Value {
    json!({"type": "prompt.respond", "source": {"kind": "player", "playerId": player_of(seat)},
           "payload": {"promptId": prompt, "response": answer}})
}

/// Whose turn it is, and the action a player there picks from what its
/// seat sees (a third of the time, a seat also pokes at a random card —
/// a flip that is refused unless it may see the card).
fn next_actions(room: &Room, dice: &mut Dice) -> Option<(String, Vec<Value>)> {
    let (seat, (prompt, choices)) = SEATS
        .iter()
        .find_map(|(s, _)| open_prompt(room, s).map(|p| ((*s).to_owned(), p)))?;
    let mut actions = vec![respond(&seat, &prompt, &choices[dice.below(choices.len())])];
    // In the canary's copy of the game, a button whose handler fails.
    if room.kernel().state().entity("oops").is_some() && dice.below(5) == 0 {
        actions.insert(
            0,
            json!({"type": "button.press",
                   "source": {"kind": "player", "playerId": player_of(&seat)},
                   "payload": {"entityId": "oops"}}),
        );
    }
    if dice.below(3) == 0 {
        let card = format!("c{:02}", 1 + dice.below(13));
        let poker = SEATS[dice.below(2)].0;
        actions.insert(
            0,
            json!({"type": "entity.flip", "source": {"kind": "player", "playerId": player_of(poker)},
                   "payload": {"entityId": card}}),
        );
    }
    Some((seat, actions))
}

fn game() -> PathBuf {
    root().join("examples/peek-and-play")
}

fn items(room: &Room, container: &str) -> Vec<String> {
    room.kernel()
        .state()
        .entity(container)
        .and_then(|e| e.components.container.as_ref())
        .map(|c| c.items.iter().map(|i| i.to_string()).collect())
        .unwrap_or_default()
}

/// Plays both worlds on from their saves with the same public actions
/// (what the seat that acts does is picked in world one and carried to
/// world two with `x` and `y` traded) and compares what each of `viewers`
/// gets, action by action, until `x` or `y` comes into its view in either
/// world. Returns how many observations were compared, and how many of
/// them held a script error.
fn compare_worlds(
    one: &mut Room,
    two: &mut Room,
    x: &str,
    y: &str,
    viewers: &[Viewer],
    dice: &mut Dice,
    label: &str,
) -> (usize, usize) {
    let (mut compared, mut errors) = (0, 0);
    let mut diverged = vec![false; viewers.len()];
    for step in 0..60 {
        let Some((_, actions)) = next_actions(one, dice) else {
            break;
        };
        for a1 in actions {
            let a2 = swap_strings(a1.clone(), x, y);
            let (e1, e2) = (act(one, &a1), act(two, &a2));
            for (v, viewer) in viewers.iter().enumerate() {
                diverged[v] |= [&*one, &*two]
                    .iter()
                    .any(|r| known(r, x, viewer) || known(r, y, viewer));
                if diverged[v] {
                    continue;
                }
                let (o1, o2) = (observation(one, &e1, viewer), observation(two, &e2, viewer));
                assert_eq!(
                    o1, o2,
                    "{label}, step {step}, {viewer:?} tells the worlds apart after {a1}"
                );
                compared += 1;
                errors += usize::from(o1.contains("\"type\":\"script.error\""));
            }
        }
        if diverged.iter().all(|d| *d) {
            break;
        }
    }
    (compared, errors)
}

/// Must show (issue 17): the twin-world property, over many seeds and both
/// seats as S.
#[test]
fn twin_deals_that_differ_only_in_what_a_seat_cannot_see_look_the_same_to_it() {
    // The canary's copy: prompt titles carry a card's marker and a button
    // fails with a pile card's marker, so errors are compared too.
    let game = canary_game();
    let (mut compared, mut runs, mut errors) = (0, 0, 0);
    for seed in 0..24_u64 {
        for (s, _) in SEATS {
            let b = if s == "north" { "south" } else { "north" };
            let one = started(&game, seed);
            // A card in the other seat's hand and one at the bottom of the
            // pile: S sees neither.
            let x = items(&one, &format!("hand_{b}"))[dice_pick(seed, 3)].clone();
            let y = items(&one, "draw_pile")[0].clone();
            let save = one.save_json("peek-and-play");
            let mut one = resumed(&game, &save, &format!("twin-a-{seed}-{s}"));
            let mut two = resumed(
                &game,
                &swap_places(&save, &x, &y),
                &format!("twin-b-{seed}-{s}"),
            );
            // Different deals indeed: the referee sees them differ.
            assert_ne!(one.kernel().state_hash(), two.kernel().state_hash());
            let viewers = [Viewer::Seat(s.into()), Viewer::Spectator];
            let mut dice = Dice(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let (n, e) = compare_worlds(
                &mut one,
                &mut two,
                &x,
                &y,
                &viewers,
                &mut dice,
                &format!("seed {seed}, S = {s}"),
            );
            compared += n;
            errors += e;
            runs += 1;
        }
    }
    // Not vacuous: most steps were compared before a peek or a play
    // brought a traded card into view.
    assert!(
        compared >= runs * 8,
        "only {compared} observations compared over {runs} runs"
    );
    assert!(errors > 0, "no script error was compared");
}

fn dice_pick(seed: u64, n: usize) -> usize {
    usize::try_from(seed % n as u64).unwrap_or(0)
}

/// Must show (issue 17): following a card through a shuffle. North holds a
/// card, takes a new hand (the card goes back into the pile, which is
/// shuffled); for every other card of the pile, a world where the two
/// trade places looks the same to every seat and to a spectator until one
/// of them is drawn into view.
#[test]
fn a_card_shuffled_back_into_the_pile_cannot_be_followed() {
    let mut followed = 0;
    let mut draws_seen = 0;
    for seed in 0..12_u64 {
        let mut room = started(&game(), seed);
        let held = items(&room, "hand_north");
        // North's first move: a mulligan.
        let (prompt, choices) = open_prompt(&room, "north").expect("north to play");
        assert!(choices.contains(&"mulligan".to_owned()));
        let events = act(&mut room, &respond("north", &prompt, "mulligan"));
        let north = Viewer::Seat("north".into());
        let pile = items(&room, "draw_pile");
        let Some(x) = held.iter().find(|c| pile.contains(c)).cloned() else {
            continue; // every card came straight back: nothing to follow
        };
        // North saw it go in, and from then on sees no trace of it.
        let seen = observation(&mut room, &events, &north);
        assert!(
            !seen.contains(&format!("\"{x}\"")),
            "seed {seed}: north still sees {x}: {seen}"
        );
        let save = room.save_json("peek-and-play");
        for y in pile.iter().filter(|c| **c != x) {
            let mut one = resumed(&game(), &save, &format!("follow-a-{seed}-{y}"));
            let mut two = resumed(
                &game(),
                &swap_places(&save, &x, y),
                &format!("follow-b-{seed}-{y}"),
            );
            let viewers = [
                north.clone(),
                Viewer::Seat("south".into()),
                Viewer::Spectator,
            ];
            let mut dice = Dice(seed ^ 0xA5A5_5A5A_1234_5678);
            let before = one.kernel().state().sequence;
            let (n, _) = compare_worlds(
                &mut one,
                &mut two,
                &x,
                y,
                &viewers,
                &mut dice,
                &format!("seed {seed}, {x} and {y}"),
            );
            followed += n;
            if n > 0 && one.kernel().state().sequence > before + 2 {
                draws_seen += 1;
            }
        }
    }
    assert!(followed >= 100, "only {followed} observations compared");
    assert!(draws_seen > 0);
}

/// A copy of the game whose cards carry a marker in a hidden prop, whose
/// prompt titles name the asked player's first card's marker, and whose
/// `oops` button fails with the marker of the pile's bottom card in the
/// error message. Its own text names every card by id: the prompt titles
/// the other hand's and the pile's cards, the status text the pile's top,
/// `observe` and `public_view` the hands and the pile (in lists, as keys
/// and in sentences), `legal_actions` flips of the pile's and the other
/// hand's cards, and `can_act` refuses south's flips with a reason naming
/// the pile and both hands.
fn canary_game() -> PathBuf {
    let game = example_copy("hidden-canary", "peek-and-play");
    edit_manifest(&game, |doc| {
        let entities = doc["entities"].as_array_mut().expect("entities");
        for e in entities.iter_mut() {
            if let Some(id) = e["id"]
                .as_str()
                .filter(|id| id.starts_with('c'))
                .map(str::to_owned)
            {
                e["props"]["secret"] = json!(format!("CANARY-{id}"));
            }
        }
        entities.push(json!({"id": "oops", "components": {"button": {}}}));
        doc["scripts"].as_array_mut().expect("scripts").push(
            json!({"id": "leaky", "file": "scripts/leaky.lua", "bindings": [{"id": "global"}]}),
        );
    });
    let main = game.join("scripts/main.lua");
    let src = std::fs::read_to_string(&main).expect("main.lua");
    let edit = |src: String, from: &str, to: &str| {
        assert!(src.contains(from), "main.lua has no {from:?}");
        src.replace(from, to)
    };
    let src = edit(
        src,
        "ui:prompt(game.seat(seat), \"Your move\", choices,",
        "local first = hand(seat):items()[1]\n  ui:prompt(game.seat(seat), \"Your move \" .. (first and first.props.secret or \"\") .. \" (theirs: \" .. names(hand(other(seat))) .. \"; pile: \" .. names(pile()) .. \")\", choices,",
    );
    let src = edit(
        src,
        "local function say(text) game.entity(\"status\"):set_text(text) end",
        NAMING_HELPERS,
    );
    let src = edit(
        src,
        "function observe(seat)\n  return {\n",
        "function observe(seat)\n  return {\n    theirs = keyed(hand(other(seat))), pileIds = ids(pile()),\n    sentence = \"they hold \" .. names(hand(other(seat))) .. \".\",\n",
    );
    let src = edit(
        src,
        "function public_view()\n  return { ",
        "function public_view()\n  return { hands = \"north holds \" .. names(hand(\"north\")) .. \"; south holds \" .. names(hand(\"south\")), pileIds = ids(pile()), north = keyed(hand(\"north\")), ",
    );
    let src = src + NAMING_FUNCTIONS;
    std::fs::write(&main, src).expect("write main.lua");
    std::fs::write(
        game.join("scripts/leaky.lua"),
        "function on_button_pressed(event)\n  error(\"leaked \" .. game.entity(\"draw_pile\"):items()[1].props.secret)\nend\n",
    )
    .expect("write leaky.lua");
    game
}

/// The canary copy's helpers (in place of `say`, which now names the
/// pile's top card too): a container's card ids as a list, as keys, and
/// in words.
const NAMING_HELPERS: &str = r#"local function ids(c)
  local out = {}
  for _, e in ipairs(c:items()) do out[#out + 1] = e.id end
  return out
end
local function keyed(c)
  local out = {}
  for _, e in ipairs(c:items()) do out[e.id] = "held" end
  return out
end
local function names(c) return table.concat(ids(c), ", ") end
local function say(text)
  game.entity("status"):set_text(text .. " [pile: " .. names(game.entity("draw_pile")) .. "]")
end"#;

/// The canary copy's legal actions and general guard, naming cards.
const NAMING_FUNCTIONS: &str = r#"
function legal_actions(seat)
  local out = {}
  for _, c in ipairs(pile():items()) do
    out[#out + 1] = { type = "entity.flip", payload = { entityId = c.id } }
  end
  for _, c in ipairs(hand(other(seat)):items()) do
    out[#out + 1] = { type = "entity.flip", payload = { entityId = c.id }, note = "flip " .. c.id .. "?" }
  end
  return out
end

function can_act(player, action)
  if action.type == "entity.flip" and game.seat_of(player) == "south" then
    return false, "no flips: the pile holds " .. names(pile()) .. "; north holds "
      .. names(hand("north")) .. "; south holds " .. names(hand("south"))
  end
  return true
end
"#;

/// The card ids (`c` and two digits) that appear in `text` as whole
/// units (docs/observations.md, Text a game writes): not inside a longer
/// word, such as an alias's hex digits.
fn card_ids(text: &str) -> Vec<String> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices('c')
        .filter_map(|(i, _)| {
            let id = text.get(i..i + 3)?;
            let digits = id[1..].bytes().all(|b| b.is_ascii_digit());
            let before = text[..i].chars().next_back();
            let after = text.get(i + 3..).and_then(|r| r.chars().next());
            (digits && !word(before) && !word(after)).then(|| id.to_owned())
        })
        .collect()
}

/// The cards whose markers appear in `text`.
fn markers(text: &str) -> Vec<String> {
    text.match_indices("CANARY-c")
        .filter_map(|(i, m)| text.get(i + m.len() - 1..i + m.len() + 2))
        .map(str::to_owned)
        .collect()
}

/// Must show (issue 17): the canary. Over long random playouts, through
/// every output a viewer gets — events (prompts, rejections, script errors
/// included), the state and its hash — no marker reaches a viewer who may
/// not see its card.
#[test]
fn no_canary_reaches_a_viewer_who_may_not_see_its_card() {
    let game = canary_game();
    let viewers = [
        Viewer::Seat("north".into()),
        Viewer::Seat("south".into()),
        Viewer::Spectator,
    ];
    let (mut checked, mut referee_saw, mut errors) = (0, 0, 0);
    let (mut ids_checked, mut ids_hidden) = (0, 0);
    for seed in 0..16_u64 {
        let mut room = started(&game, seed);
        let mut dice = Dice(seed.wrapping_add(77).wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
        for _ in 0..80 {
            let Some((_, actions)) = next_actions(&room, &mut dice) else {
                break;
            };
            for action in actions {
                let events = act(&mut room, &action);
                errors += events
                    .iter()
                    .filter(|e| e.type_name() == "script.error")
                    .count();
                let all = observation(&mut room, &events, &Viewer::Referee);
                referee_saw += markers(&all).len();
                for viewer in &viewers {
                    let text = observation(&mut room, &events, viewer);
                    for card in markers(&text) {
                        assert!(
                            known(&room, &card, viewer),
                            "seed {seed}: {viewer:?} got the marker of {card} after {action}:\n{text}"
                        );
                        checked += 1;
                    }
                    // The game's text names every card: a seat reads only
                    // the ids of the cards it sees.
                    for card in card_ids(&text) {
                        assert!(
                            known(&room, &card, viewer),
                            "seed {seed}: {viewer:?} got the id {card} after {action}:\n{text}"
                        );
                        ids_checked += 1;
                    }
                    ids_hidden += card_ids(&all)
                        .iter()
                        .filter(|c| !known(&room, c, viewer))
                        .count();
                }
            }
        }
    }
    // The canary was there to find: the referee saw markers everywhere,
    // the leaky button failed, and seats saw the markers of their cards.
    assert!(
        referee_saw > 1000 && errors > 10 && checked > 1000,
        "{referee_saw} {errors} {checked}"
    );
    // And the ids: the referee read the game naming cards the viewers do
    // not see, many times over; the viewers read the ids of their own.
    assert!(
        ids_hidden > 10_000 && ids_checked > 1000,
        "{ids_hidden} {ids_checked}"
    );
}

/// docs/observations.md, A game's own view: a failing `observe` leaves
/// the seat a null view, and its message — which may name anything — goes
/// to the designer as a notice, not to the seat.
#[test]
fn a_failing_view_is_null_for_the_seat_and_a_notice_for_the_designer() {
    let game = example_copy("hidden-failing-view", "peek-and-play");
    let main = game.join("scripts/main.lua");
    let src = std::fs::read_to_string(&main).expect("main.lua");
    let src = src.replace(
        "function observe(seat)\n",
        "function observe(seat)\n  if seat == \"south\" then error(\"secret \" .. hand(\"north\"):items()[1].id) end\n",
    );
    std::fs::write(&main, src).expect("write");
    let mut room = started(&game, 1);
    let north = room.observe(&Viewer::Seat("north".into()));
    assert!(north.to_canonical_json().contains("\"yourTurn\":true"));
    let south = room.observe(&Viewer::Seat("south".into()));
    let text = south.to_canonical_json();
    assert!(text.ends_with(",\"view\":null}"), "{text}");
    let first = items(&room, "hand_north")[0].clone();
    assert!(!text.contains(&format!("\"{first}\"")));
    let notices = room.take_notices().join("\n");
    assert!(
        notices.contains("observe failed (runtime), the view is null: "),
        "{notices}"
    );
    assert!(notices.contains(&first), "{notices}");
}

/// docs/observations.md, Text a game writes, end to end through Lua: the
/// canary copy's `observe(seat)` names the other hand's cards in a list
/// of keys and a sentence and the pile's in a list, and `public_view()`
/// both hands — each reaches its viewer with `?` for every card it cannot
/// place, as does the status text; once north has peeked, the same view
/// names south's cards by their ids (north sees them now).
#[test]
fn a_games_view_names_cards_as_the_viewer_sees_them() {
    let mut room = started(&canary_game(), 5);
    let north = Viewer::Seat("north".into());
    let view = |room: &mut Room, viewer: &Viewer| -> Value {
        let doc: Value =
            serde_json::from_str(&room.observe(viewer).to_canonical_json()).expect("JSON");
        doc
    };
    let pile = items(&room, "draw_pile");
    let south_hand = items(&room, "hand_south");
    let doc = view(&mut room, &north);
    assert_eq!(doc["view"]["theirs"], json!({"?": "held"}), "{doc}");
    assert_eq!(doc["view"]["pileIds"], json!(vec!["?"; pile.len()]));
    assert_eq!(doc["view"]["sentence"], json!("they hold ?, ?, ?."));
    let status = doc["entities"]["status"]["components"]["text"]["value"]
        .as_str()
        .expect("the status text");
    let unseen = vec!["?"; pile.len()].join(", ");
    assert!(status.ends_with(&format!("[pile: {unseen}]")), "{status}");
    let spectator = view(&mut room, &Viewer::Spectator);
    assert_eq!(
        spectator["view"]["hands"],
        json!("north holds ?, ?, ?; south holds ?, ?, ?")
    );
    assert_eq!(spectator["view"]["north"], json!({"?": "held"}));
    // North peeks: south's cards are north's to see, by their ids.
    let (prompt, _) = open_prompt(&room, "north").expect("north to play");
    act(&mut room, &respond("north", &prompt, "peek"));
    let doc = view(&mut room, &north);
    let keys: Vec<String> = doc["view"]["theirs"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let mut expected = south_hand.clone();
    expected.sort();
    assert_eq!(keys, expected, "{doc}");
    assert_eq!(
        doc["view"]["sentence"],
        json!(format!("they hold {}.", south_hand.join(", ")))
    );
    // The spectator still sees none of them.
    let spectator = view(&mut room, &Viewer::Spectator);
    assert_eq!(
        spectator["view"]["hands"],
        json!("north holds ?, ?, ?; south holds ?, ?, ?")
    );
}

/// North's hand in world two: the same cards in another order — the
/// save's item list, and the open prompt's `play:` choices, which the
/// game lists in hand order.
fn reorder_hand_in_save(save: &str, hand: &str, order: &[String]) -> String {
    let mut doc: Value = serde_json::from_str(save).expect("save JSON");
    let state = &mut doc["state"];
    state["entities"][hand]["components"]["container"]["items"] = json!(order);
    if let Some(prompts) = state["prompts"].as_object_mut() {
        for p in prompts.values_mut().filter(|p| p["status"] == "open") {
            let Some(choices) = p["choices"].as_array_mut() else {
                continue;
            };
            let plays: Vec<Value> = order.iter().map(|c| json!(format!("play:{c}"))).collect();
            let in_hand = |c: &Value| plays.contains(c);
            if choices.iter().filter(|c| in_hand(c)).count() == plays.len() {
                let rest: Vec<Value> = choices.iter().filter(|c| !in_hand(c)).cloned().collect();
                *choices = plays.into_iter().chain(rest).collect();
            }
        }
    }
    doc.to_string()
}

/// North sorts its hand into a random order of its own.
fn sort_hand(room: &Room, dice: &mut Dice) -> Value {
    let mut hand = items(room, "hand_north");
    for i in (1..hand.len()).rev() {
        hand.swap(i, dice.below(i + 1));
    }
    json!({"type": "container.reorder", "source": {"kind": "player", "playerId": "ann"},
           "payload": {"entityId": "hand_north", "items": hand}})
}

/// Where the card north played lay in its hand, as the referee saw it.
fn played_from(events: &[digipology_kernel::Event]) -> Option<u64> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::ContainerMoved {
            from: Some(from),
            from_index,
            ..
        } if &**from == "hand_north" => *from_index,
        _ => None,
    })
}

/// Must show (issue 37): a hand's order tells nothing. Two worlds that
/// differ only in the order of north's hand (the same cards), played with
/// the same actions — north plays the same cards, from different places
/// in its hand — and north sorting its hand in each world into orders of
/// its own as it goes: south and a spectator get byte-identical
/// observations (events, state, view hash, legal actions) of every
/// action, a peek at north's hand included, until north takes a new
/// hand (its cards go into the pile in hand order, and the worlds deal
/// differently from then on). North itself sees its orders differ.
#[test]
fn a_hands_order_tells_nothing_to_anyone_but_its_owner() {
    let viewers = [Viewer::Seat("south".into()), Viewer::Spectator];
    let north = Viewer::Seat("north".into());
    let (mut compared, mut plays_apart, mut sorts, mut north_apart) = (0, 0, 0, 0);
    for seed in 0..16_u64 {
        let one = started(&game(), seed);
        let hand = items(&one, "hand_north");
        let mut order = hand.clone();
        order.rotate_left(1 + dice_pick(seed, hand.len() - 1));
        assert_ne!(order, hand);
        let save = one.save_json("peek-and-play");
        let mut one = resumed(&game(), &save, &format!("order-a-{seed}"));
        let mut two = resumed(
            &game(),
            &reorder_hand_in_save(&save, "hand_north", &order),
            &format!("order-b-{seed}"),
        );
        assert_ne!(one.kernel().state_hash(), two.kernel().state_hash());
        let mut dice = Dice(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
        let mut dice_two = Dice(seed ^ 0x5DEE_CE66_D1CE_4E5B);
        'play: for step in 0..60 {
            let Some((seat, actions)) = next_actions(&one, &mut dice) else {
                break;
            };
            let mut steps: Vec<(Value, Value)> =
                actions.into_iter().map(|a| (a.clone(), a)).collect();
            if seat == "north" && dice.below(2) == 0 {
                steps.insert(
                    0,
                    (sort_hand(&one, &mut dice), sort_hand(&two, &mut dice_two)),
                );
                sorts += 1;
            }
            for (a1, a2) in steps {
                let takes_new_hand = a1["payload"]["response"] == "mulligan" && seat == "north";
                let (e1, e2) = (act(&mut one, &a1), act(&mut two, &a2));
                if takes_new_hand {
                    break 'play;
                }
                if let (Some(i), Some(j)) = (played_from(&e1), played_from(&e2)) {
                    plays_apart += usize::from(i != j);
                }
                for viewer in &viewers {
                    let (o1, o2) = (
                        observation(&mut one, &e1, viewer),
                        observation(&mut two, &e2, viewer),
                    );
                    assert_eq!(
                        o1, o2,
                        "seed {seed}, step {step}: {viewer:?} tells north's orders apart after {a1}"
                    );
                    compared += 1;
                }
                north_apart += usize::from(
                    observation(&mut one, &e1, &north) != observation(&mut two, &e2, &north),
                );
            }
        }
    }
    assert!(compared >= 300, "only {compared} observations compared");
    assert!(
        plays_apart >= 10,
        "only {plays_apart} plays from different places"
    );
    assert!(
        sorts >= 10 && north_apart >= 10,
        "{sorts} sorts, {north_apart}"
    );
}

/// Must show (issue 37): players sort their cards. North puts its hand in
/// an order of its own; south and a spectator learn that it did and no
/// more; another seat cannot arrange north's hand, nor anyone the pile —
/// the same answer whatever it names; a game's general guard still
/// decides.
#[test]
fn a_player_sorts_their_own_hand_and_only_they_see_the_order() {
    let game = example_copy("hidden-sort", "peek-and-play");
    let main = game.join("scripts/main.lua");
    let src = std::fs::read_to_string(&main).expect("main.lua");
    std::fs::write(
        &main,
        src + r#"
function can_act(player, action)
  local seat = game.seat_of(player)
  if action.type == "container.reorder" and action.payload.entityId == "hand_" .. tostring(seat)
      and seat ~= storage.seat then
    return false, "sort your hand on your turn"
  end
  return true
end
"#,
    )
    .expect("write");
    let mut room = started(&game, 3);
    let mut hand = items(&room, "hand_north");
    hand.reverse();
    let sort = |p: &str, container: &str, list: &[String]| {
        json!({"type": "container.reorder", "source": {"kind": "player", "playerId": p},
               "payload": {"entityId": container, "items": list}})
    };
    let events = act(&mut room, &sort("ann", "hand_north", &hand));
    assert_eq!(items(&room, "hand_north"), hand);
    let seen = |room: &mut Room, viewer: &str| {
        let mut line = String::new();
        assert!(room.kernel().state().write_event_for(
            &events[0],
            &Viewer::parse(viewer),
            &mut line
        ));
        line
    };
    assert!(seen(&mut room, "north").contains(&format!("\"items\":{}", json!(hand))));
    for viewer in ["south", "spectator"] {
        let line = seen(&mut room, viewer);
        assert!(
            line.ends_with("\"data\":{\"containerId\":\"hand_north\",\"items\":null}}"),
            "{viewer}: {line}"
        );
    }
    // Not another seat's hand, nor the pile: refused before what it names
    // is looked at.
    let code = |events: &[digipology_kernel::Event]| match &events[0].kind {
        EventKind::ActionRejected { rejection, .. } => {
            Some((rejection.code.as_str(), rejection.message.clone()))
        }
        _ => None,
    };
    let mut real = hand.clone();
    real.sort();
    let (c, m1) = code(&act(&mut room, &sort("bob", "hand_north", &real))).expect("refused");
    assert_eq!(c, "not_yours");
    let fake = vec!["c99".to_owned(); real.len()];
    let (_, m2) = code(&act(&mut room, &sort("bob", "hand_north", &fake))).expect("refused");
    assert_eq!(m1, m2, "what south named makes no difference");
    let pile = items(&room, "draw_pile");
    let (c, _) = code(&act(&mut room, &sort("ann", "draw_pile", &pile))).expect("refused");
    assert_eq!(c, "not_yours");
    // The game's general guard still decides: south may sort on its turn
    // only, and it is north's.
    let mut south = items(&room, "hand_south");
    south.reverse();
    let (c, m) = code(&act(&mut room, &sort("bob", "hand_south", &south))).expect("refused");
    assert_eq!(
        (c, m.as_str()),
        ("guard_denied", "sort your hand on your turn")
    );
    assert_ne!(items(&room, "hand_south"), south);
}

/// Must show (issue 37), through the command line: `run --view` as south
/// or as a spectator prints the same events (JSONL and text), state
/// (`--state-out`), observations and closing view hash whichever orders
/// north sorts its hand into before playing the same cards; as north,
/// they differ.
#[test]
fn run_view_shows_no_one_else_the_order_north_sorts_its_hand_into() {
    let dir = scratch("hidden-run-order");
    let setup: Vec<&str> = include_str!("../examples/peek-and-play/actions.jsonl")
        .lines()
        .take(5)
        .collect();
    let sort = |list: &[&str]| {
        json!({"type": "container.reorder", "source": {"kind": "player", "playerId": "ann"},
               "payload": {"entityId": "hand_north", "items": list}})
        .to_string()
    };
    let say = |p: &str, prompt: &str, answer: &str| {
        json!({"type": "prompt.respond", "source": {"kind": "player", "playerId": p},
               "payload": {"promptId": prompt, "response": answer}})
        .to_string()
    };
    // North holds c09, c12, c02 (seed 0); it plays c09, south peeks,
    // north draws c03, south draws, north plays c12 — from other places in
    // each world.
    let world = |orders: [&[&str]; 3]| -> String {
        let mut lines: Vec<String> = setup.iter().map(|l| (*l).to_owned()).collect();
        lines.push(sort(orders[0]));
        lines.push(say("ann", "ask_1", "play:c09"));
        lines.push(say("bob", "ask_2", "peek"));
        lines.push(sort(orders[1]));
        lines.push(say("ann", "ask_3", "draw"));
        lines.push(say("bob", "ask_4", "draw"));
        lines.push(sort(orders[2]));
        lines.push(say("ann", "ask_5", "play:c12"));
        lines.join("\n") + "\n"
    };
    let one = write(
        &dir,
        "one.jsonl",
        world([
            &["c09", "c12", "c02"],
            &["c12", "c02"],
            &["c12", "c02", "c03"],
        ])
        .as_bytes(),
    );
    let two = write(
        &dir,
        "two.jsonl",
        world([
            &["c02", "c12", "c09"],
            &["c02", "c12"],
            &["c03", "c02", "c12"],
        ])
        .as_bytes(),
    );
    let seen = |actions: &Path, view: &str, name: &str| -> (String, String, String, String) {
        let state = dir.join(format!("{name}-{view}-state.json"));
        let observations = dir.join(format!("{name}-{view}-observations.jsonl"));
        let out = run(
            &[
                "run",
                "examples/peek-and-play",
                "--actions",
                actions.to_str().unwrap_or_default(),
                "--format",
                "jsonl",
                "--view",
                view,
                "--state-out",
                state.to_str().unwrap_or_default(),
                "--observations",
                observations.to_str().unwrap_or_default(),
            ],
            b"",
        );
        assert!(
            out.status.success(),
            "{view}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The readable rendering too.
        let text = run(
            &[
                "run",
                "examples/peek-and-play",
                "--actions",
                actions.to_str().unwrap_or_default(),
                "--format",
                "text",
                "--view",
                view,
            ],
            b"",
        );
        assert!(text.status.success());
        (
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&text.stdout),
            std::fs::read_to_string(&state).expect("state written"),
            std::fs::read_to_string(&observations).expect("observations written"),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let referee = seen(&one, "referee", "one").0;
    assert_eq!(
        referee.matches("\"container.reordered\"").count(),
        3,
        "{referee}"
    );
    assert!(!referee.contains("action.rejected"), "{referee}");
    for view in ["south", "spectator"] {
        assert_eq!(seen(&one, view, "one"), seen(&two, view, "two"), "{view}");
    }
    let (a, b) = (seen(&one, "north", "one"), seen(&two, "north", "two"));
    assert_ne!(a.0, b.0, "north sees its own orders");
}
