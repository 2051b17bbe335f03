//! `kledger mcp`: kledger as `kledger run` starts it (its roles, on the embedded broker when no
//! bootstrap servers are configured), serving the MCP tools to one local agent over stdio, as
//! the principal `api.mcp_principal` names. Standard output is the MCP channel; logs go to
//! standard error. It stops when the agent closes its end, or on a signal.

use anyhow::Context;
use clap::Args;
use rmcp::ServiceExt;

use crate::app::{self, Roles};
use crate::config::Config;
use crate::serve::mcp::McpServer;

/// How long `kledger mcp` waits for readiness before it serves its tools.
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// `kledger mcp`.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// What this process runs besides the MCP server (it needs `api`), as for `kledger run`.
    #[arg(long, env = "KLEDGER_ROLE", default_value = "all", value_parser = Roles::parse)]
    role: Roles,
}

impl McpArgs {
    /// Runs until the agent hangs up or a signal comes.
    pub(crate) async fn run(self, config: Config) -> anyhow::Result<()> {
        let name = config.api.mcp_principal.clone();
        let principal = config
            .api
            .principals
            .get(&name)
            .map(|p| p.principal.clone())
            .ok_or_else(|| {
                super::bad_config(anyhow::anyhow!(
                    "kledger mcp serves the principal api.mcp_principal names ({name:?}): no such entry in api.principals"
                ))
            })?;
        let running = app::start_roles(config, self.role).await?;
        let api = running
            .api
            .clone()
            .context("kledger mcp needs the api role (--role api or all)")?;
        // A local agent calls its tools as soon as it has started kledger: answer once the
        // processor has restored and the vector index is open (at most READY_WAIT; after it
        // the tools answer what they can, `search_unavailable` among it).
        let deadline = std::time::Instant::now() + READY_WAIT;
        while !(running.status.ready() && api.search.as_ref().is_none_or(|s| s.get().is_some()))
            && std::time::Instant::now() < deadline
            && !running.shutdown.is_triggered()
        {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let service = McpServer::stdio(api, principal)
            .serve(rmcp::transport::stdio())
            .await
            .context("mcp over stdio")?;
        tracing::info!(principal = %name, "mcp serving on stdio");
        tokio::select! {
            _ = service.waiting() => tracing::info!("mcp: the agent closed stdio"),
            _ = super::wait_for_signal() => eprintln!("stopping"),
        }
        running.stop().await
    }
}
