//! The kernel's event table (`kernel/src/event.rs`, the `events!` rows) and
//! the event table of docs/formats.md ("Events (JSONL output)") list the same
//! events with the same data keys.

use std::collections::{BTreeMap, BTreeSet};

use digipology_kernel::event::EVENT_TABLE;

/// `type → data keys` from the docs table. A row may name two types
/// (`zone.entered / zone.left`) and note a variant in parentheses
/// (`deck.drawn (to the world)`); a data cell lists keys, each optionally
/// followed by a note (`name (string or null)`, `target = null`).
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/formats.md"))
        .expect("docs/formats.md");
    let section = text
        .split("## Events (JSONL output)")
        .nth(1)
        .expect("the events section");
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in section
        .lines()
        .skip_while(|l| !l.starts_with("| event |"))
        .skip(2)
    {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (types, data) = (cells[1], cells[2]);
        let keys: BTreeSet<String> = top_level_items(data)
            .iter()
            .map(|item| {
                item.chars()
                    .take_while(char::is_ascii_alphanumeric)
                    .collect::<String>()
            })
            .collect();
        for ty in types.split(" / ") {
            let ty = ty.split(" (").next().unwrap_or(ty).trim();
            out.entry(ty.to_owned()).or_default().extend(keys.clone());
        }
    }
    out
}

/// Comma-separated items outside parentheses.
fn top_level_items(cell: &str) -> Vec<String> {
    let (mut items, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for c in cell.chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(cur.trim().to_owned());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    items.push(cur.trim().to_owned());
    items
}

#[test]
fn the_docs_list_every_event_with_exactly_its_data_keys() {
    let docs = documented();
    let mut kernel: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for row in EVENT_TABLE {
        kernel
            .entry(row.type_name.to_owned())
            .or_default()
            .extend(row.data_keys().iter().map(|k| (*k).to_owned()));
    }
    assert_eq!(
        docs.keys().collect::<Vec<_>>(),
        kernel.keys().collect::<Vec<_>>(),
        "docs/formats.md and the kernel name the same event types"
    );
    for (ty, keys) in &kernel {
        assert_eq!(&docs[ty], keys, "{ty}: documented data keys");
    }
}

#[test]
fn every_row_has_a_unique_variant_and_unique_keys() {
    let variants: BTreeSet<&str> = EVENT_TABLE.iter().map(|r| r.variant).collect();
    assert_eq!(variants.len(), EVENT_TABLE.len());
    for row in EVENT_TABLE {
        let keys = row.data_keys();
        let unique: BTreeSet<&&str> = keys.iter().collect();
        assert_eq!(
            unique.len(),
            keys.len(),
            "{}: a data key twice",
            row.type_name
        );
        for k in row.entity_keys() {
            assert!(
                keys.contains(&k),
                "{}: entity key {k} is a data key",
                row.type_name
            );
        }
    }
}
