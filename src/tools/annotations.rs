//! Annotation tools: `annotate`, `list_annotations`, `carry_annotations`.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};

use super::{ToolError, Tools};
use crate::investigation::{
    AnnotateArgs, Annotated, AnnotationPage, CarryAnnotationsArgs, CarryResult,
    ListAnnotationsArgs, Observed,
};

#[tool_router(router = annotation_tools, vis = "pub(crate)")]
impl Tools {
    /// Record a name, comment, C prototype or type (analyst-inference Evidence).
    #[tool(
        name = "annotate",
        title = "Annotate",
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
        title = "List annotations",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn list_annotations(
        &self,
        Parameters(args): Parameters<ListAnnotationsArgs>,
    ) -> Result<Json<AnnotationPage>, ToolError> {
        Ok(Json(self.investigation.list_annotations(args).await?))
    }

    /// Carry annotations to the procedures compare_procedures matches in another version.
    #[tool(
        name = "carry_annotations",
        title = "Carry annotations to another version",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    pub async fn carry_annotations(
        &self,
        Parameters(args): Parameters<CarryAnnotationsArgs>,
    ) -> Result<Json<Observed<CarryResult>>, ToolError> {
        Ok(Json(self.investigation.carry_annotations(args).await?))
    }
}
