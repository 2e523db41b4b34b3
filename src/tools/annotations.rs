//! Annotation tools: `annotate`, `list_annotations`.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};

use super::{ToolError, Tools};
use crate::investigation::{AnnotateArgs, Annotated, AnnotationPage, ListAnnotationsArgs};

#[tool_router(router = annotation_tools, vis = "pub(crate)")]
impl Tools {
    /// Record a name, comment, C prototype or type (analyst-inference Evidence).
    #[tool(
        name = "annotate",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    pub async fn annotate(
        &self,
        Parameters(args): Parameters<AnnotateArgs>,
    ) -> Result<Json<Annotated>, ToolError> {
        Ok(Json(self.investigation.annotate(args).await?))
    }

    /// List annotation heads.
    #[tool(
        name = "list_annotations",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn list_annotations(
        &self,
        Parameters(args): Parameters<ListAnnotationsArgs>,
    ) -> Result<Json<AnnotationPage>, ToolError> {
        Ok(Json(self.investigation.list_annotations(args).await?))
    }
}
