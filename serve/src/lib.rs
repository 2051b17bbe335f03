//! HTTP: the listener (metrics, health, readiness) and the owner-scoped read API with the
//! HTTP ingress.
//!
//! - [`http`]: the accept loop, its bounds, and the operations endpoints.
//! - [`api`]: the read API and the ingress.
//! - [`mcp`]: the MCP server (Streamable HTTP at `/mcp`, and stdio for `kledger mcp`): the
//!   read tools and `remember`, through [`api`]'s functions.
//!
//! Reads the view store and the vector index, produces intents; may not touch the processor
//! or the projections' writing side.

pub mod api;
pub mod conn;
pub mod http;
pub mod mcp;
