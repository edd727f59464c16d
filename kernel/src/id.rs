//! Identifiers: the bottom floor every other module may use.

use std::sync::Arc;

/// A shared, cheaply cloned identifier (player, seat, entity, stack, …).
pub type Id = Arc<str>;
