//! Shortest call paths between two procedures (issue 18): a breadth-first search over the direct
//! call graph (calls and tail jumps, imports unified by name), bounded in depth and time, with
//! the exact number of shortest paths and the indirect calls that could hide a path as short as
//! the ones found.
//!
//! The graph is built once per image with [`CallGraph::build`] (one decode of every procedure,
//! the same edges `procedure_callees` reports); [`CallGraph::paths`] then answers queries in time
//! proportional to the part of the graph within the bound.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::providers::native::{Image, ProviderError, hex, hex_opt};

/// Longest path, in calls, a query may ask for.
pub const MAX_DEPTH: usize = 32;

/// The depth bound of a query that names none, in calls.
pub const DEFAULT_DEPTH: usize = 12;

/// Most paths one answer lists; the count is exact regardless.
pub const MAX_PATHS: usize = 1_000;

/// Most indirect-call gaps one answer lists; the count is exact regardless.
pub const MAX_GAPS: usize = 200;

/// Why a query was refused.
#[derive(Debug, thiserror::Error)]
pub enum CallPathError {
    /// The depth bound exceeds [`MAX_DEPTH`].
    #[error("max_depth {max_depth} exceeds the limit of {MAX_DEPTH} calls")]
    DepthTooLarge {
        /// The depth asked for.
        max_depth: usize,
    },
    /// The address is neither a procedure start, an import, nor a call target.
    #[error(
        "{} is not a procedure start, an import or a call target; list_procedures gives valid starts",
        crate::providers::native::format_address(*address)
    )]
    NotInGraph {
        /// The address asked for.
        address: u64,
    },
    /// The image could not be decoded.
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

/// What a node of the call graph is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKind {
    /// A procedure of the document.
    Procedure,
    /// An imported function (every stub and slot of one name is one node).
    Import,
    /// A direct call target that starts no known procedure.
    Address,
}

/// How control reaches the next step of a path.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Via {
    /// A call instruction.
    Call,
    /// A jump to another procedure's start (or an import) that does not return here.
    TailJump,
}

#[derive(Debug, Clone)]
struct Node {
    address: u64,
    name: Option<String>,
    kind: NodeKind,
}

#[derive(Debug, Clone, Copy)]
struct Edge {
    to: u32,
    via: Via,
    /// The first instruction making the transfer.
    site: u64,
}

#[derive(Debug, Clone)]
struct Gap {
    site: u64,
    kind: String,
    operand: String,
}

/// The direct call graph of one document.
#[derive(Debug, Clone)]
pub struct CallGraph {
    nodes: Vec<Node>,
    by_address: HashMap<u64, u32>,
    /// Out-edges per node, one per distinct target, sorted by the target's address.
    edges: Vec<Vec<Edge>>,
    /// Unresolved indirect transfers per node.
    gaps: Vec<Vec<Gap>>,
}

/// A procedure, import or call target named in an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NodeRef {
    /// Address (canonical lowercase `0x` hex): the procedure start, or for an import the first
    /// stub or slot through which it is called.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// Name, when known.
    pub name: Option<String>,
    /// The analyst's name, beside `name` (an annotation; absent when none). Left out of the
    /// schema (tools/list budget), which allows it like any other member.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub analyst: Option<crate::ids::AnalystName>,
    /// Procedure, import or address.
    pub kind: NodeKind,
}

/// One step of a path: the procedure reached, and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PathStep {
    /// The procedure (or import) reached.
    pub node: NodeRef,
    /// How the previous step reached it (absent on the first step).
    pub via: Option<Via>,
    /// The first instruction of the previous step that makes the transfer (absent on the
    /// first step).
    #[serde(with = "hex_opt")]
    #[schemars(with = "Option<String>")]
    pub site: Option<u64>,
}

/// One path, from the query's `from` to its `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CallPath {
    /// Steps from `from` (first) to `to` (last); a path of n calls has n + 1 steps.
    pub steps: Vec<PathStep>,
}

/// An indirect call or jump whose destination is not known, which could lead to a path the
/// direct graph does not show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PathGap {
    /// The procedure holding the transfer.
    pub procedure: NodeRef,
    /// Calls from `from` to that procedure on a shortest route.
    pub depth: usize,
    /// Address of the instruction.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub site: u64,
    /// `call` or `jump`.
    pub kind: String,
    /// The operand as disassembled.
    pub operand: String,
}

/// A query: from where to where, how deep, how many paths, how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathQuery {
    /// Start address (a procedure start).
    pub from: u64,
    /// Destination (a procedure start, an import's stub or slot, or a call target).
    pub to: u64,
    /// Longest path considered, in calls (at most [`MAX_DEPTH`]).
    pub max_depth: usize,
    /// Most paths listed (at most [`MAX_PATHS`]).
    pub limit: usize,
    /// Time allowed; the answer says when it ran out.
    pub budget: Duration,
}

/// The answer to a [`PathQuery`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CallPaths {
    /// The start.
    pub from: NodeRef,
    /// The destination.
    pub to: NodeRef,
    /// The depth bound used, in calls.
    pub max_depth: usize,
    /// Length of the shortest paths in calls, when one exists within the bound.
    pub shortest: Option<usize>,
    /// Exact number of distinct shortest paths (as sequences of procedures) within the bound;
    /// absent when the time budget ran out first. Saturates at 2^64 − 1.
    pub total: Option<u64>,
    /// The first `limit` shortest paths, ordered by the addresses along them.
    pub paths: Vec<CallPath>,
    /// Whether fewer paths are listed than exist.
    pub truncated: bool,
    /// Indirect transfers in procedures reachable from `from` in fewer calls than the shortest
    /// path (all reachable within `max_depth` when none was found): each could hide a path no
    /// longer than those reported (a switch's jump through a recognised table is not one). The
    /// first 200, by depth then site.
    pub gaps: Vec<PathGap>,
    /// Exact number of such gaps (absent when the time budget ran out first).
    pub gaps_total: Option<u64>,
    /// Whether `to` can be reached from `from` by direct calls at all, at any depth: the search
    /// goes on past `max_depth` when no path was found within it. Absent when the time budget
    /// ran out before that was known.
    pub reachable: Option<bool>,
    /// When no path is found within `max_depth` but one exists deeper: the length of the
    /// shortest, in calls (ask again with that `max_depth`, at most the limit, to list them).
    pub shortest_beyond: Option<usize>,
    /// Whether the time budget ran out; `total`, `paths` and `gaps` are then incomplete.
    pub deadline_hit: bool,
}

impl CallGraph {
    /// Builds the direct call graph of an image: one node per procedure, import (by name) and
    /// direct call target; one edge per calling procedure and target.
    pub fn build(image: &Image) -> Result<CallGraph, CallPathError> {
        let procedures = image.procedures();
        let mut graph = CallGraph {
            nodes: Vec::with_capacity(procedures.len()),
            by_address: HashMap::with_capacity(procedures.len()),
            edges: Vec::new(),
            gaps: Vec::new(),
        };
        let mut imports: HashMap<String, u32> = HashMap::new();
        // Imports first, so that a PLT stub (a procedure too) is the import's node.
        for import in image.imports() {
            let id = match imports.get(&import.name) {
                Some(&id) => id,
                None => {
                    let id = graph.push(Node {
                        address: import.address,
                        name: Some(import.name.clone()),
                        kind: NodeKind::Import,
                    });
                    imports.insert(import.name.clone(), id);
                    id
                }
            };
            graph.by_address.entry(import.address).or_insert(id);
        }
        for p in procedures {
            if !graph.by_address.contains_key(&p.address) {
                let id = graph.push(Node {
                    address: p.address,
                    name: p.name.clone(),
                    kind: NodeKind::Procedure,
                });
                graph.by_address.insert(p.address, id);
            }
        }
        let mut out: Vec<Vec<Edge>> = vec![Vec::new(); graph.nodes.len()];
        let mut gaps: Vec<Vec<Gap>> = vec![Vec::new(); graph.nodes.len()];
        for p in procedures {
            let from = graph.by_address[&p.address];
            let callees = image.callees(p.address)?;
            for edge in callees.callees {
                let to = match graph.by_address.get(&edge.target) {
                    Some(&to) => to,
                    None => {
                        let to = graph.push(Node {
                            address: edge.target,
                            name: edge.name.clone(),
                            kind: NodeKind::Address,
                        });
                        graph.by_address.insert(edge.target, to);
                        out.push(Vec::new());
                        gaps.push(Vec::new());
                        to
                    }
                };
                if to == from {
                    continue;
                }
                let via = if edge.via == "tail-jump" {
                    Via::TailJump
                } else {
                    Via::Call
                };
                let site = edge.sites.first().copied().unwrap_or(edge.target);
                out[from as usize].push(Edge { to, via, site });
            }
            // An import stub's own indirect jump is the dynamic link to the import it stands
            // for, not a call whose target is unknown.
            if graph.nodes[from as usize].kind == NodeKind::Import {
                continue;
            }
            gaps[from as usize].extend(callees.unresolved.into_iter().map(|u| Gap {
                site: u.site,
                kind: u.kind,
                operand: u.operand,
            }));
        }
        for (list, node_gaps) in out.iter_mut().zip(&mut gaps) {
            // One edge per target: a call wins over a tail jump, then the first site.
            list.sort_by_key(|e| (graph.nodes[e.to as usize].address, e.via, e.site));
            list.dedup_by_key(|e| e.to);
            node_gaps.sort_by_key(|g| g.site);
        }
        graph.edges = out;
        graph.gaps = gaps;
        Ok(graph)
    }

    fn push(&mut self, node: Node) -> u32 {
        self.nodes.push(node);
        (self.nodes.len() - 1) as u32
    }

    /// Number of nodes (procedures, imports and call targets).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Number of edges (distinct caller → target pairs).
    pub fn edge_count(&self) -> usize {
        self.edges.iter().map(Vec::len).sum()
    }

    fn node_ref(&self, id: u32) -> NodeRef {
        let n = &self.nodes[id as usize];
        NodeRef {
            analyst: None,
            address: n.address,
            name: n.name.clone(),
            kind: n.kind,
        }
    }

    fn node(&self, address: u64) -> Result<u32, CallPathError> {
        self.by_address
            .get(&address)
            .copied()
            .ok_or(CallPathError::NotInGraph { address })
    }

    /// The shortest call paths of a query.
    pub fn paths(&self, query: &PathQuery) -> Result<CallPaths, CallPathError> {
        let started = Instant::now();
        let out_of_time = || started.elapsed() >= query.budget;
        if query.max_depth > MAX_DEPTH {
            return Err(CallPathError::DepthTooLarge {
                max_depth: query.max_depth,
            });
        }
        let from = self.node(query.from)?;
        let to = self.node(query.to)?;
        let limit = query.limit.min(MAX_PATHS);
        let mut answer = CallPaths {
            from: self.node_ref(from),
            to: self.node_ref(to),
            max_depth: query.max_depth,
            shortest: None,
            total: None,
            paths: Vec::new(),
            truncated: false,
            gaps: Vec::new(),
            gaps_total: None,
            reachable: None,
            shortest_beyond: None,
            deadline_hit: false,
        };
        // Breadth-first levels with shortest-path counts; the search stops after the level
        // that reaches `to`, or at the depth bound.
        const UNSEEN: u32 = u32::MAX;
        let mut depth = vec![UNSEEN; self.nodes.len()];
        let mut count = vec![0u64; self.nodes.len()];
        let mut levels: Vec<Vec<u32>> = vec![vec![from]];
        depth[from as usize] = 0;
        count[from as usize] = 1;
        let mut found = (from == to).then_some(0usize);
        let mut steps = 0u64;
        let mut exhausted = false;
        while found.is_none() && levels.len() <= query.max_depth {
            if out_of_time() {
                answer.deadline_hit = true;
                return Ok(answer);
            }
            let level = levels.len() as u32;
            let mut next = Vec::new();
            for &u in levels.last().expect("a level") {
                for e in &self.edges[u as usize] {
                    steps += 1;
                    if steps.is_multiple_of(4096) && out_of_time() {
                        answer.deadline_hit = true;
                        return Ok(answer);
                    }
                    let v = e.to as usize;
                    if depth[v] == UNSEEN {
                        depth[v] = level;
                        next.push(e.to);
                    }
                    if depth[v] == level {
                        count[v] = count[v].saturating_add(count[u as usize]);
                    }
                }
            }
            if next.is_empty() {
                exhausted = true;
                break;
            }
            next.sort_by_key(|&v| self.nodes[v as usize].address);
            if depth[to as usize] == level {
                found = Some(level as usize);
            }
            levels.push(next);
        }
        answer.shortest = found;
        answer.total = Some(found.map_or(0, |_| count[to as usize]));
        // Gaps within the levels that could still hide a path as short as the one found.
        let gap_levels = found.unwrap_or(query.max_depth).min(levels.len());
        let mut gaps_total = 0u64;
        for (d, level) in levels.iter().enumerate().take(gap_levels) {
            for &u in level {
                for g in &self.gaps[u as usize] {
                    gaps_total += 1;
                    if answer.gaps.len() < MAX_GAPS {
                        answer.gaps.push(PathGap {
                            procedure: self.node_ref(u),
                            depth: d,
                            site: g.site,
                            kind: g.kind.clone(),
                            operand: g.operand.clone(),
                        });
                    }
                }
            }
        }
        answer.gaps_total = Some(gaps_total);
        let Some(length) = found else {
            // Nothing within the bound: whether `to` lies deeper, from the last level on.
            if exhausted {
                answer.reachable = Some(false);
                return Ok(answer);
            }
            let mut frontier = levels.last().cloned().unwrap_or_default();
            let mut level = levels.len() as u32;
            while !frontier.is_empty() {
                let mut next = Vec::new();
                for &u in &frontier {
                    for e in &self.edges[u as usize] {
                        steps += 1;
                        if steps.is_multiple_of(4096) && out_of_time() {
                            answer.deadline_hit = true;
                            return Ok(answer);
                        }
                        if depth[e.to as usize] == UNSEEN {
                            depth[e.to as usize] = level;
                            next.push(e.to);
                        }
                    }
                }
                if depth[to as usize] == level {
                    answer.reachable = Some(true);
                    answer.shortest_beyond = Some(level as usize);
                    return Ok(answer);
                }
                frontier = next;
                level += 1;
            }
            answer.reachable = Some(false);
            return Ok(answer);
        };
        answer.reachable = Some(true);
        // Which nodes of the search lead to `to` along shortest-path edges.
        let mut leads = vec![false; self.nodes.len()];
        leads[to as usize] = true;
        for level in levels[..length].iter().rev() {
            for &u in level {
                leads[u as usize] = self.edges[u as usize]
                    .iter()
                    .any(|e| depth[e.to as usize] == depth[u as usize] + 1 && leads[e.to as usize]);
            }
        }
        // Depth-first enumeration in address order, up to `limit` paths.
        let mut stack: Vec<(u32, usize)> = vec![(from, 0)];
        let mut trail: Vec<PathStep> = vec![PathStep {
            node: self.node_ref(from),
            via: None,
            site: None,
        }];
        if from == to {
            if limit > 0 {
                answer.paths.push(CallPath {
                    steps: trail.clone(),
                });
            }
            stack.clear();
        }
        let on_route = |u: u32, e: &Edge| {
            depth[e.to as usize] == depth[u as usize] + 1 && leads[e.to as usize]
        };
        while let Some(top) = stack.len().checked_sub(1) {
            if answer.paths.len() >= limit {
                break;
            }
            steps += 1;
            if steps.is_multiple_of(4096) && out_of_time() {
                answer.deadline_hit = true;
                break;
            }
            let (u, first) = stack[top];
            let edges = &self.edges[u as usize];
            let Some(i) = (first..edges.len()).find(|&i| on_route(u, &edges[i])) else {
                stack.pop();
                trail.pop();
                continue;
            };
            stack[top].1 = i + 1;
            let e = edges[i];
            trail.push(PathStep {
                node: self.node_ref(e.to),
                via: Some(e.via),
                site: Some(e.site),
            });
            if e.to == to {
                answer.paths.push(CallPath {
                    steps: trail.clone(),
                });
                trail.pop();
            } else {
                stack.push((e.to, 0));
            }
        }
        answer.truncated = (answer.paths.len() as u64) < count[to as usize];
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzers::testbuild::{
        ARM64, GCC, MINGW, Toolchain, build, image, listing, nm_functions,
    };

    const CALLGRAPH: &str = include_str!("testdata/callgraph.c");

    /// Sites in `caller` that transfer to `callee`, by the toolchain's objdump.
    fn sites(chain: Toolchain, path: &std::path::Path, caller: &str, callee: &str) -> Vec<u64> {
        listing(chain, path, caller)
            .into_iter()
            .filter(|(_, text)| text.ends_with(&format!("<{callee}>")))
            .map(|(address, _)| address)
            .collect()
    }

    fn query(graph: &CallGraph, from: u64, to: u64, max_depth: usize) -> CallPaths {
        graph
            .paths(&PathQuery {
                from,
                to,
                max_depth,
                limit: 10,
                budget: Duration::from_secs(60),
            })
            .unwrap()
    }

    fn names(path: &CallPath) -> Vec<&str> {
        path.steps
            .iter()
            .map(|s| s.node.name.as_deref().unwrap_or("?"))
            .collect()
    }

    #[test]
    fn shortest_paths_follow_the_known_graph() {
        for (chain, opt) in [(GCC, "-O0"), (GCC, "-O2"), (MINGW, "-O2"), (ARM64, "-O2")] {
            let dir = tempfile::tempdir().unwrap();
            let built = build(dir.path(), chain, opt, CALLGRAPH, &[], "callgraph");
            let sym = nm_functions(chain, &built.plain);
            let case = format!("{} {opt}", chain.cc);
            // The stripped twin has the same graph at the same addresses, without names.
            for file in [&built.plain, &built.stripped] {
                let graph = CallGraph::build(&image(file)).unwrap();
                let at = |name: &str| sym[name];

                let p = query(&graph, at("main"), at("c"), 12);
                assert_eq!((p.shortest, p.total), (Some(2), Some(1)), "{case}: {p:?}");
                let steps = &p.paths[0].steps;
                let route: Vec<u64> = steps.iter().map(|s| s.node.address).collect();
                assert_eq!(route, [at("main"), at("d"), at("c")], "{case}");
                assert_eq!(steps[1].via, Some(Via::Call));
                assert_eq!(
                    steps[1].site,
                    sites(chain, &built.plain, "main", "d").first().copied()
                );
                assert_eq!(
                    steps[2].site,
                    sites(chain, &built.plain, "d", "c").first().copied()
                );
                // -O2 turns `return c(x ^ 5)` into a jump.
                let d_to_c = if opt == "-O2" {
                    Via::TailJump
                } else {
                    Via::Call
                };
                assert_eq!(steps[2].via, Some(d_to_c), "{case}");
                assert!(!p.truncated && !p.deadline_hit);
                // The indirect call of via_pointer (one call from main) could hide a path of
                // two calls; it is listed as a gap.
                let pointer_gaps: Vec<&PathGap> = p
                    .gaps
                    .iter()
                    .filter(|g| g.procedure.address == at("via_pointer"))
                    .collect();
                assert_eq!(pointer_gaps.len(), 1, "{case}: {:?}", p.gaps);
                assert_eq!(
                    (pointer_gaps[0].depth, pointer_gaps[0].kind.as_str()),
                    (1, "call")
                );
                assert!(p.gaps.iter().all(|g| g.depth < 2));
                if chain.cc == "gcc" {
                    assert_eq!(p.gaps_total, Some(1), "{case}: {:?}", p.gaps);
                }

                let p = query(&graph, at("e"), at("c"), 12);
                assert_eq!((p.shortest, p.total), (Some(2), Some(2)), "{case}");
                let mut middles: Vec<u64> =
                    p.paths.iter().map(|x| x.steps[1].node.address).collect();
                let expected = {
                    let mut v = vec![at("f"), at("g")];
                    v.sort_unstable();
                    v
                };
                assert_eq!(middles, expected, "paths are listed in address order");
                middles.dedup();
                assert_eq!(middles.len(), 2);

                let p = query(&graph, at("main"), at("pong"), 12);
                let route: Vec<u64> = p.paths[0].steps.iter().map(|s| s.node.address).collect();
                assert_eq!(route, [at("main"), at("ping"), at("pong")], "{case}");
                assert_eq!(p.total, Some(1));

                // Around the cycle and back: pong reaches itself in no calls.
                let p = query(&graph, at("pong"), at("pong"), 12);
                assert_eq!(
                    (p.shortest, p.total, p.paths[0].steps.len()),
                    (Some(0), Some(1), 1)
                );
                let p = query(&graph, at("pong"), at("ping"), 12);
                assert_eq!((p.shortest, p.total), (Some(1), Some(1)), "{case}");

                // Nothing calls main.
                let p = query(&graph, at("c"), at("main"), 12);
                assert_eq!((p.shortest, p.total, p.paths.len()), (None, Some(0), 0));
                assert_eq!((p.reachable, p.shortest_beyond), (Some(false), None));
                let p = query(&graph, at("main"), at("c"), MAX_DEPTH);
                assert_eq!((p.shortest, p.reachable), (Some(2), Some(true)));

                // The bound: c is two calls from main (main -> d -> c), so past a bound of one
                // the answer says c lies two calls deep.
                let p = query(&graph, at("main"), at("c"), 1);
                assert_eq!((p.shortest, p.total), (None, Some(0)), "{case}");
                assert_eq!((p.reachable, p.shortest_beyond), (Some(true), Some(2)));
                assert!(p.gaps.iter().all(|g| g.depth == 0));
            }
        }
    }

    #[test]
    fn names_limits_imports_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let built = build(dir.path(), GCC, "-O2", CALLGRAPH, &[], "callgraph");
        let sym = nm_functions(GCC, &built.plain);
        let img = image(&built.plain);
        let graph = CallGraph::build(&img).unwrap();
        let p = query(&graph, sym["main"], sym["c"], 12);
        assert_eq!(names(&p.paths[0]), ["main", "d", "c"]);
        // An import is a destination: printf through its PLT stub.
        let printf = img.imports().iter().find(|i| i.name == "printf").unwrap();
        let p = query(&graph, sym["main"], printf.address, 12);
        assert_eq!(p.shortest, Some(1));
        assert_eq!(p.to.kind, NodeKind::Import);
        assert_eq!(names(&p.paths[0]), ["main", "printf"]);
        // A limit of one lists one of the two paths and says the list is cut.
        let p = graph
            .paths(&PathQuery {
                from: sym["e"],
                to: sym["c"],
                max_depth: 12,
                limit: 1,
                budget: Duration::from_secs(60),
            })
            .unwrap();
        assert_eq!((p.total, p.paths.len(), p.truncated), (Some(2), 1, true));
        // No time at all: the answer says so and claims no count.
        let p = graph
            .paths(&PathQuery {
                from: sym["main"],
                to: sym["c"],
                max_depth: 12,
                limit: 10,
                budget: Duration::ZERO,
            })
            .unwrap();
        assert!(p.deadline_hit);
        assert_eq!((p.total, p.gaps_total), (None, None));
        let too_deep = graph.paths(&PathQuery {
            from: sym["main"],
            to: sym["c"],
            max_depth: 33,
            limit: 10,
            budget: Duration::from_secs(1),
        });
        assert!(matches!(
            too_deep,
            Err(CallPathError::DepthTooLarge { max_depth: 33 })
        ));
        let nowhere = graph.paths(&PathQuery {
            from: sym["main"] + 1,
            to: sym["c"],
            max_depth: 3,
            limit: 10,
            budget: Duration::from_secs(1),
        });
        assert!(matches!(nowhere, Err(CallPathError::NotInGraph { .. })));
        // On the wire addresses are canonical text.
        let p = query(&graph, sym["main"], sym["c"], 12);
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["paths"][0]["steps"][1]["via"], "call");
        assert_eq!(json["from"]["address"], format!("{:#x}", sym["main"]));
        assert!(
            json["paths"][0]["steps"][1]["site"]
                .as_str()
                .unwrap()
                .starts_with("0x")
        );
    }
}
