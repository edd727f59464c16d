//! The table page (docs/table.md): plain HTML, JavaScript and CSS built
//! into the binary, served at `/`. It talks to the same API as any other
//! client, with the seat's token; it needs nothing from the network.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/table.js");
const STYLE: &str = include_str!("page/table.css");

/// Only this server's own files run on the page: no inline script, no
/// other origin (a name a player typed can never become code).
const POLICY: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'";

fn asset(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-cache"),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// `/` (the lobby and, by its address's fragment, a match), its script
/// and its style.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/table.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/table.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
}
