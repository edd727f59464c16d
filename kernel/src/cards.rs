//! Card sets: a `cards` definition on a container entity of `game.json`
//! (docs/formats.md, Card sets) expands at load into exactly the entities
//! a hand-written file would list, in the product order of its dimensions
//! (the first dimension outermost, the last changing fastest), appended
//! to the container's `items` after any listed there by hand. Nothing
//! about a card remembers it was made this way: the canonical state and
//! its hash are those of the hand-written twin.
//!
//! A template string names a dimension's value as `{name}` and a field of
//! an object value as `{name.field}`; `{{` and `}}` are literal braces. In
//! `id` and `tags` every substitution is text; in `props` and
//! `components` a string that is exactly one placeholder takes the value
//! itself (a number stays a number), any other is text. Templates are
//! compiled once, so an unknown variable is reported once, at its key
//! path, before any card is made.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json};

use crate::def::{as_object, err, only_keys, LoadError};
use crate::state::{Id, State};

/// The most cards the `cards` definitions of one `game.json` may make in
/// all (the scale the engine is measured at: docs/performance.md).
pub const CARDS_MAX: usize = 100_000;

/// The most dimensions one card set may have.
pub const DIMENSIONS_MAX: usize = 8;

/// What the card sets of one `game.json` have made so far: who made each
/// id (to name both sides of a collision), how many cards, how many bytes.
///
/// The cards together may measure at most the game's byte budget
/// (`limits.bytesMax`, 64 MiB when absent; docs/lua-api.md, The byte
/// budget): a table whose cards alone are over it could never start, and
/// checking card by card refuses a large template before its copies fill
/// memory.
pub(crate) struct Made {
    /// Makes an entity from its definition, as `game.json`'s are made
    /// (given by the loader, so this module needs none of it).
    make: MakeEntity,
    /// The byte budget the cards must fit in.
    budget: u64,
    /// The key path of every card set so far.
    sets: Vec<String>,
    /// Every card made: its set (an index into `sets`) and its values.
    by: BTreeMap<Id, (usize, String)>,
    count: usize,
    bytes: u64,
}

/// An entity from its `game.json` definition (`load::entity_from_def`).
pub(crate) type MakeEntity =
    fn(&str, &Map<String, Json>, &str) -> Result<crate::state::Entity, LoadError>;

impl Made {
    /// Nothing made yet, for a game whose byte budget is `budget`, each
    /// card made by `make`.
    pub(crate) fn new(budget: u64, make: MakeEntity) -> Made {
        Made {
            make,
            budget,
            sets: Vec::new(),
            by: BTreeMap::new(),
            count: 0,
            bytes: 0,
        }
    }

    /// Where the card `id` was made (`entities["deck"].cards (rank 1,
    /// suit "a")`), when a card set made it.
    pub(crate) fn origin(&self, id: &str) -> Option<String> {
        let (set, which) = self.by.get(id)?;
        Some(format!("{} ({which})", self.sets.get(*set)?))
    }
}

/// One value of a dimension: the value itself and its named fields.
struct Choice {
    value: Json,
    fields: BTreeMap<String, Json>,
}

struct Dimension {
    name: String,
    choices: Vec<Choice>,
}

/// A placeholder: a dimension (by index) and a field (`None`: the value).
#[derive(Clone)]
struct Var {
    dim: usize,
    field: Option<String>,
}

enum Piece {
    Text(String),
    Var(Var),
}

/// A compiled template.
enum Tpl {
    /// No placeholder inside.
    Lit(Json),
    /// A string made of text and placeholders.
    Text(Vec<Piece>),
    /// A string that is exactly one placeholder, in props or components:
    /// the value itself.
    Whole(Var),
    Array(Vec<Tpl>),
    Object(Vec<(String, Tpl)>),
}

/// Makes the cards of `def` (the `cards` key of the container entity
/// `holder`, at `path`), inserts them into `state` and appends their ids
/// to `holder`'s container items.
///
/// # Errors
/// The first problem, with its key path.
pub(crate) fn expand(
    state: &mut State,
    made: &mut Made,
    holder: &str,
    def: &Json,
    path: &str,
) -> Result<(), LoadError> {
    match def {
        Json::Array(sets) => {
            if sets.is_empty() {
                return err(
                    path,
                    "is an empty list: give one card set, or a list of them",
                );
            }
            for (i, set) in sets.iter().enumerate() {
                expand_set(state, made, holder, set, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        _ => expand_set(state, made, holder, def, path),
    }
}

fn expand_set(
    state: &mut State,
    made: &mut Made,
    holder: &str,
    def: &Json,
    path: &str,
) -> Result<(), LoadError> {
    let obj = as_object(def, path).map_err(|_| LoadError {
        path: path.to_owned(),
        message: "must be a card set like {\"each\": [{\"name\": \"suit\", \"values\": [\"a\", \"b\"]}], \"card\": {\"id\": \"card_{suit}\"}}, or a list of them".into(),
    })?;
    only_keys(obj, &["each", "card"], path)?;
    let dims = dimensions(obj.get("each"), &format!("{path}.each"))?;
    let Some(card) = obj.get("card") else {
        return err(
            path,
            "needs \"card\": the template of every card, like {\"id\": \"card_{rank}{suit}\", \"props\": {\"rank\": \"{rank}\"}}",
        );
    };
    let tpl = card_template(card, &dims, &format!("{path}.card"))?;
    let count = card_count(&dims, made, path)?;
    room_in_holder(state, holder, count, path)?;
    made.sets.push(path.to_owned());
    let mut at = vec![0usize; dims.len()];
    let mut ids = Vec::with_capacity(count);
    for _ in 0..count {
        let id = make_card(state, made, &dims, &tpl, &at, path)?;
        ids.push(id);
        next(&mut at, &dims);
    }
    let key = state.key(holder).ok_or_else(|| LoadError {
        path: path.to_owned(),
        message: format!("the entity \"{holder}\" is not loaded"),
    })?;
    if let Some(c) = state
        .entity_mut(key)
        .and_then(|e| e.components.container.as_mut())
    {
        c.items.extend(ids);
    }
    Ok(())
}

/// The next card's choices: the last dimension changes fastest.
fn next(at: &mut [usize], dims: &[Dimension]) {
    for (i, d) in dims.iter().enumerate().rev() {
        at[i] += 1;
        if at[i] < d.choices.len() {
            return;
        }
        at[i] = 0;
    }
}

/// How many cards the dimensions make, within what the game may make.
fn card_count(dims: &[Dimension], made: &Made, path: &str) -> Result<usize, LoadError> {
    let sizes: Vec<String> = dims.iter().map(|d| d.choices.len().to_string()).collect();
    let count = dims
        .iter()
        .try_fold(1usize, |n, d| n.checked_mul(d.choices.len()));
    let left = CARDS_MAX - made.count;
    match count {
        Some(n) if n <= left => Ok(n),
        _ => err(
            path,
            format!(
                "makes {} cards ({}){}, more than the {CARDS_MAX} the card sets of one game may make in all",
                count.map_or_else(|| "too many".to_owned(), |n| n.to_string()),
                sizes.join(" × "),
                if made.count > 0 {
                    format!(" after {} made by the sets before it", made.count)
                } else {
                    String::new()
                },
            ),
        ),
    }
}

/// The holder's container can take `count` more cards.
fn room_in_holder(state: &State, holder: &str, count: usize, path: &str) -> Result<(), LoadError> {
    let Some(c) = state
        .entity(holder)
        .and_then(|e| e.components.container.as_ref())
    else {
        return err(
            path,
            format!("cards go into their entity's container: give \"{holder}\" a \"container\" component"),
        );
    };
    let total = c.items.len().saturating_add(count);
    match c.capacity {
        Some(cap) if total as u64 > cap => err(
            path,
            format!(
                "makes {count} cards, and with the {} items before them the container would hold {total}, over its capacity of {cap}",
                c.items.len()
            ),
        ),
        _ => Ok(()),
    }
}

/// A name a template can use: letters, digits and `_`, not starting with
/// a digit.
fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_scalar(v: &Json) -> bool {
    matches!(v, Json::String(_) | Json::Number(_) | Json::Bool(_))
}

fn dimensions(each: Option<&Json>, path: &str) -> Result<Vec<Dimension>, LoadError> {
    let Some(each) = each else {
        return err(
            path.trim_end_matches(".each"),
            "needs \"each\": its dimensions, like [{\"name\": \"rank\", \"values\": [1, 2, 3]}, {\"name\": \"suit\", \"values\": [\"a\", \"b\"]}]",
        );
    };
    let list = match each.as_array() {
        Some(l) if !l.is_empty() => l,
        _ => {
            return err(
                path,
                "must be a non-empty list of dimensions, like [{\"name\": \"suit\", \"values\": [\"a\", \"b\"]}]",
            )
        }
    };
    if list.len() > DIMENSIONS_MAX {
        return err(
            path,
            format!(
                "{} dimensions, more than the {DIMENSIONS_MAX} a card set may have",
                list.len()
            ),
        );
    }
    let mut dims: Vec<Dimension> = Vec::with_capacity(list.len());
    for (i, d) in list.iter().enumerate() {
        let dpath = format!("{path}[{i}]");
        let dim = dimension(d, &dpath)?;
        if let Some(j) = dims.iter().position(|o| o.name == dim.name) {
            return err(
                &format!("{dpath}.name"),
                format!(
                    "\"{}\" is also the name of {path}[{j}]: each dimension needs its own name",
                    dim.name
                ),
            );
        }
        dims.push(dim);
    }
    Ok(dims)
}

fn dimension(d: &Json, path: &str) -> Result<Dimension, LoadError> {
    let obj = d.as_object().ok_or_else(|| LoadError {
        path: path.to_owned(),
        message: "must be a dimension like {\"name\": \"suit\", \"values\": [\"a\", \"b\"]}".into(),
    })?;
    only_keys(obj, &["name", "values"], path)?;
    let name = match obj.get("name").and_then(Json::as_str) {
        Some(n) if is_name(n) => n.to_owned(),
        _ => {
            return err(
                &format!("{path}.name"),
                "must be a name of letters, digits and _ that does not start with a digit, like \"suit\" (templates use it as {suit})",
            )
        }
    };
    let vpath = format!("{path}.values");
    let values = match obj.get("values") {
        None => {
            return err(
                &vpath,
                "is missing: give the dimension's values, like [\"a\", \"b\"]",
            )
        }
        Some(Json::Array(v)) => v,
        Some(_) => return err(&vpath, "must be a list of values, like [\"a\", \"b\"]"),
    };
    if values.is_empty() {
        return err(
            &vpath,
            "is empty, so the set would make no cards: give at least one value",
        );
    }
    let choices = values
        .iter()
        .enumerate()
        .map(|(j, v)| choice(v, &format!("{vpath}[{j}]"), &name))
        .collect::<Result<_, _>>()?;
    Ok(Dimension { name, choices })
}

fn choice(v: &Json, path: &str, name: &str) -> Result<Choice, LoadError> {
    if is_scalar(v) {
        return Ok(Choice {
            value: v.clone(),
            fields: BTreeMap::new(),
        });
    }
    let wrong = || {
        LoadError {
        path: path.to_owned(),
        message: format!(
            "must be a string, a number, a boolean, or an object with a \"value\" and fields of its own, like {{\"value\": 1, \"label\": \"Ace\"}} (templates use them as {{{name}}} and {{{name}.label}})"
        ),
    }
    };
    let obj = v.as_object().ok_or_else(wrong)?;
    let value = obj.get("value").ok_or_else(wrong)?;
    let mut fields = BTreeMap::new();
    for (k, f) in obj {
        let fpath = format!("{path}.{k}");
        if !is_name(k) {
            return err(
                &fpath,
                "a field's name is letters, digits and _ that does not start with a digit",
            );
        }
        if !is_scalar(f) {
            return err(&fpath, "must be a string, a number or a boolean");
        }
        if k != "value" {
            fields.insert(k.clone(), f.clone());
        }
    }
    Ok(Choice {
        value: value.clone(),
        fields,
    })
}

/// The card template: `id` (required), `tags`, `props`, `components`.
fn card_template(card: &Json, dims: &[Dimension], path: &str) -> Result<Tpl, LoadError> {
    let obj = as_object(card, path)?;
    only_keys(obj, &["id", "tags", "props", "components"], path)?;
    match obj.get("id") {
        Some(Json::String(_)) => {}
        _ => {
            return err(
                &format!("{path}.id"),
                "every card needs an id template that tells the cards apart, like \"card_{rank}{suit}\"",
            )
        }
    }
    let mut out = Vec::with_capacity(obj.len());
    for (k, v) in obj {
        let typed = k == "props" || k == "components";
        out.push((k.clone(), compile(v, dims, &format!("{path}.{k}"), typed)?));
    }
    Ok(Tpl::Object(out))
}

/// Compiles a template value; `typed` lets a lone placeholder keep its
/// value's type.
fn compile(v: &Json, dims: &[Dimension], path: &str, typed: bool) -> Result<Tpl, LoadError> {
    Ok(match v {
        Json::String(s) => {
            let pieces = pieces(s, dims, path)?;
            match pieces.as_slice() {
                [] => Tpl::Lit(Json::String(String::new())),
                [Piece::Text(t)] => Tpl::Lit(Json::String(t.clone())),
                [Piece::Var(var)] if typed => Tpl::Whole(var.clone()),
                _ => Tpl::Text(pieces),
            }
        }
        Json::Array(items) => Tpl::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, x)| compile(x, dims, &format!("{path}[{i}]"), typed))
                .collect::<Result<_, _>>()?,
        ),
        Json::Object(map) => Tpl::Object(
            map.iter()
                .map(|(k, x)| Ok((k.clone(), compile(x, dims, &format!("{path}.{k}"), typed)?)))
                .collect::<Result<_, LoadError>>()?,
        ),
        other => Tpl::Lit(other.clone()),
    })
}

/// A template string cut into text and placeholders.
fn pieces(s: &str, dims: &[Dimension], path: &str) -> Result<Vec<Piece>, LoadError> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(['{', '}']) {
        text.push_str(&rest[..i]);
        let brace = &rest[i..];
        if let Some(r) = brace
            .strip_prefix("{{")
            .map(|r| (r, '{'))
            .or_else(|| brace.strip_prefix("}}").map(|r| (r, '}')))
        {
            text.push(r.1);
            rest = r.0;
            continue;
        }
        if brace.starts_with('}') {
            return err(
                path,
                format!("\"{s}\" has a }} with no {{ before it (write }}}} for a brace)"),
            );
        }
        let Some(end) = brace.find('}') else {
            return err(
                path,
                format!("\"{s}\" has a {{ that is never closed (write {{{{ for a brace)"),
            );
        };
        let var = variable(&brace[1..end], dims, path)?;
        if !text.is_empty() {
            out.push(Piece::Text(std::mem::take(&mut text)));
        }
        out.push(Piece::Var(var));
        rest = &brace[end + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    Ok(out)
}

/// `name` or `name.field`, resolved against the dimensions; a field must
/// be on every value of its dimension.
fn variable(inside: &str, dims: &[Dimension], path: &str) -> Result<Var, LoadError> {
    let (name, field) = match inside.split_once('.') {
        Some((n, f)) => (n, Some(f)),
        None => (inside, None),
    };
    let names: Vec<&str> = dims.iter().map(|d| d.name.as_str()).collect();
    let Some(dim) = names.iter().position(|n| *n == name) else {
        return err(
            path,
            format!(
                "unknown variable {{{inside}}}: this card set's dimensions are {} (write {{{{ for a brace)",
                names.join(", ")
            ),
        );
    };
    let field = match field {
        None | Some("value") => None,
        Some(f) => {
            let d = &dims[dim];
            if let Some(j) = d.choices.iter().position(|c| !c.fields.contains_key(f)) {
                return err(
                    path,
                    format!(
                        "uses {{{inside}}}, but value {j} of {name} ({}) has no field \"{f}\"",
                        d.choices[j].value
                    ),
                );
            }
            Some(f.to_owned())
        }
    };
    Ok(Var { dim, field })
}

/// The value of a placeholder for the card at `at`.
fn lookup<'a>(var: &Var, dims: &'a [Dimension], at: &[usize]) -> &'a Json {
    let choice = &dims[var.dim].choices[at[var.dim]];
    match &var.field {
        None => &choice.value,
        Some(f) => choice.fields.get(f).unwrap_or(&choice.value),
    }
}

/// A scalar as text: a string as it is, a number in canonical form.
fn push_text(v: &Json, out: &mut String) {
    match v {
        Json::String(s) => out.push_str(s),
        Json::Number(n) => match n.as_f64().filter(|f| f.is_finite()) {
            Some(f) => crate::value::write_number(f, out),
            None => out.push_str(&n.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
}

/// About how many bytes filling `tpl` at `at` writes beyond its literal
/// parts (which the file holds already): each placeholder's value, as many
/// times as it is used — known before a byte is written, so a template
/// that copies a big value thousands of times is refused, not built.
fn filled_len(tpl: &Tpl, dims: &[Dimension], at: &[usize]) -> u64 {
    fn value_len(v: &Json) -> u64 {
        match v {
            Json::String(s) => u64::try_from(s.len()).unwrap_or(u64::MAX),
            Json::Array(a) => a.iter().map(value_len).fold(8, u64::saturating_add),
            Json::Object(o) => o
                .iter()
                .map(|(k, x)| {
                    value_len(x).saturating_add(u64::try_from(k.len()).unwrap_or(u64::MAX))
                })
                .fold(8, u64::saturating_add),
            _ => 8,
        }
    }
    match tpl {
        Tpl::Lit(_) => 0,
        Tpl::Whole(var) => value_len(lookup(var, dims, at)),
        Tpl::Text(pieces) => pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => u64::try_from(t.len()).unwrap_or(u64::MAX),
                Piece::Var(var) => value_len(lookup(var, dims, at)),
            })
            .fold(0, u64::saturating_add),
        Tpl::Array(items) => items
            .iter()
            .map(|t| filled_len(t, dims, at))
            .fold(0, u64::saturating_add),
        Tpl::Object(map) => map
            .iter()
            .map(|(_, t)| filled_len(t, dims, at))
            .fold(0, u64::saturating_add),
    }
}

fn fill(tpl: &Tpl, dims: &[Dimension], at: &[usize]) -> Json {
    match tpl {
        Tpl::Lit(v) => v.clone(),
        Tpl::Whole(var) => lookup(var, dims, at).clone(),
        Tpl::Text(pieces) => {
            let mut s = String::new();
            for p in pieces {
                match p {
                    Piece::Text(t) => s.push_str(t),
                    Piece::Var(var) => push_text(lookup(var, dims, at), &mut s),
                }
            }
            Json::String(s)
        }
        Tpl::Array(items) => Json::Array(items.iter().map(|t| fill(t, dims, at)).collect()),
        Tpl::Object(map) => Json::Object(
            map.iter()
                .map(|(k, t)| (k.clone(), fill(t, dims, at)))
                .collect::<Map<String, Json>>(),
        ),
    }
}

/// `rank 1, suit "a"`: which card, for messages.
fn describe(dims: &[Dimension], at: &[usize]) -> String {
    dims.iter()
        .zip(at)
        .map(|(d, i)| format!("{} {}", d.name, d.choices[*i].value))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Makes, checks and inserts the card at `at`; returns its id.
fn make_card(
    state: &mut State,
    made: &mut Made,
    dims: &[Dimension],
    tpl: &Tpl,
    at: &[usize],
    path: &str,
) -> Result<Id, LoadError> {
    let which = describe(dims, at);
    let filled = filled_len(tpl, dims, at);
    if made.bytes.saturating_add(filled) > made.budget {
        return err(
            path,
            format!(
                "the card ({which}) would write {filled} bytes of values, more than the table's byte budget has left ({} of {} bytes; limits.bytesMax; docs/lua-api.md, The byte budget): make fewer or smaller cards, or raise limits.bytesMax",
                made.budget.saturating_sub(made.bytes),
                made.budget
            ),
        );
    }
    let Json::Object(def) = fill(tpl, dims, at) else {
        return err(path, "the card template must be an object");
    };
    let id_path = format!("{path}.card.id");
    let id = match def.get("id").and_then(Json::as_str) {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => return err(&id_path, format!("the card ({which}) gets an empty id")),
    };
    let card = (made.make)(&id, &def, &format!("{path}.card")).map_err(|e| LoadError {
        path: e.path,
        message: format!("{} (in the card \"{id}\": {which})", e.message),
    })?;
    made.bytes = made.bytes.saturating_add(crate::bytes::entity_bytes(&card));
    if made.bytes > made.budget {
        return err(
            path,
            format!(
                "the cards up to \"{id}\" already measure {} bytes, more than the table's byte budget of {} (limits.bytesMax; docs/lua-api.md, The byte budget): make fewer or smaller cards, or raise limits.bytesMax",
                made.bytes, made.budget
            ),
        );
    }
    let set = made.sets.len().saturating_sub(1);
    if state.entity(&id).is_some() {
        let message = match made.by.get(id.as_str()) {
            Some((s, first)) if *s == set => format!(
                "the cards ({first}) and ({which}) both get the id \"{id}\": the id template must tell every card apart (use every dimension in it)"
            ),
            Some(_) => format!(
                "the card ({which}) gets the id \"{id}\", which {} makes too: rename one",
                made.origin(&id).unwrap_or_default()
            ),
            None => format!(
                "the card ({which}) gets the id \"{id}\" of the entity entities[\"{id}\"] defined before it: rename one"
            ),
        };
        return err(&id_path, message);
    }
    state.insert_entity(card).map_err(|m| LoadError {
        path: id_path,
        message: m,
    })?;
    made.by.insert(Id::from(id.as_str()), (set, which));
    made.count += 1;
    Ok(Id::from(id.as_str()))
}
