//! The production backend: a Qdrant server over gRPC (qdrant-client). Calls run on a private
//! current-thread runtime, so the sink thread and the API's blocking tasks call it like the
//! embedded engine. Filters arrive in the shared REST JSON form and are converted here
//! (the subset kledger writes: must/should/must_not, nested filters, match value/any, is_null).

use std::collections::HashMap;

use qdrant_client::Qdrant;
use qdrant_client::qdrant::r#match::MatchValue;
use qdrant_client::qdrant::point_id::PointIdOptions;
use qdrant_client::qdrant::{
    Condition, CountPointsBuilder, CreateCollectionBuilder, CreateFieldIndexCollectionBuilder,
    DeletePointsBuilder, Distance, FieldType as QFieldType, Filter, KeywordIndexParamsBuilder,
    PointId, PointStruct, PointsIdsList, Query, QueryBatchPointsBuilder, QueryPoints,
    QueryPointsBuilder, ScoredPoint, ScrollPointsBuilder, SparseVectorParamsBuilder,
    SparseVectorsConfigBuilder, UpsertPointsBuilder, Vector, VectorInput, VectorParamsBuilder,
    VectorsConfigBuilder,
};
use serde_json::Value;
use uuid::Uuid;

use super::{
    DENSE, FieldType, Point, QueryVector, SPARSE, Scanned, VectorError, VectorIndex,
    payload_indexes,
};

fn err(e: impl std::fmt::Display) -> VectorError {
    VectorError::Backend(e.to_string())
}

fn ferr(what: &str, v: &Value) -> VectorError {
    VectorError::Filter(format!("{what}: {v}"))
}

fn match_value(v: &Value) -> Result<MatchValue, VectorError> {
    Ok(match v {
        Value::String(s) => MatchValue::Keyword(s.clone()),
        Value::Bool(b) => MatchValue::Boolean(*b),
        Value::Number(n) => MatchValue::Integer(n.as_i64().ok_or_else(|| ferr("match", v))?),
        _ => return Err(ferr("match value", v)),
    })
}

fn match_any(v: &Value) -> Result<MatchValue, VectorError> {
    let items = v.as_array().ok_or_else(|| ferr("match any", v))?;
    let strings: Option<Vec<String>> = items
        .iter()
        .map(|i| i.as_str().map(str::to_owned))
        .collect();
    if let Some(s) = strings {
        return Ok(MatchValue::Keywords(
            qdrant_client::qdrant::RepeatedStrings { strings: s },
        ));
    }
    let ints: Option<Vec<i64>> = items.iter().map(Value::as_i64).collect();
    ints.map(|integers| MatchValue::Integers(qdrant_client::qdrant::RepeatedIntegers { integers }))
        .ok_or_else(|| ferr("match any", v))
}

fn condition(c: &Value) -> Result<Condition, VectorError> {
    if c.get("must").is_some() || c.get("should").is_some() || c.get("must_not").is_some() {
        return Ok(filter(c)?.into());
    }
    if let Some(k) = c
        .get("is_null")
        .and_then(|n| n.get("key"))
        .and_then(Value::as_str)
    {
        return Ok(Condition::is_null(k));
    }
    let (Some(key), Some(m)) = (c.get("key").and_then(Value::as_str), c.get("match")) else {
        return Err(ferr("condition", c));
    };
    let mv = match (m.get("value"), m.get("any")) {
        (Some(v), _) => match_value(v)?,
        (None, Some(any)) => match_any(any)?,
        _ => return Err(ferr("match", m)),
    };
    Ok(Condition::matches(key, mv))
}

fn conditions(f: &Value, name: &str) -> Result<Vec<Condition>, VectorError> {
    match f.get(name) {
        None => Ok(Vec::new()),
        Some(Value::Array(cs)) => cs.iter().map(condition).collect(),
        Some(other) => Ok(vec![condition(other)?]),
    }
}

/// Converts a REST JSON filter (the shared model) into the gRPC filter.
pub fn filter(f: &Value) -> Result<Filter, VectorError> {
    Ok(Filter {
        must: conditions(f, "must")?,
        should: conditions(f, "should")?,
        must_not: conditions(f, "must_not")?,
        min_should: None,
    })
}

fn uuid_of(id: &PointId) -> Option<Uuid> {
    match &id.point_id_options {
        Some(PointIdOptions::Uuid(s)) => Uuid::parse_str(s).ok(),
        _ => None,
    }
}

fn json_of(v: qdrant_client::qdrant::Value) -> Value {
    use qdrant_client::qdrant::value::Kind;
    match v.kind {
        Some(Kind::NullValue(_)) | None => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(b),
        Some(Kind::IntegerValue(i)) => Value::from(i),
        Some(Kind::DoubleValue(d)) => Value::from(d),
        Some(Kind::StringValue(s)) => Value::String(s),
        Some(Kind::ListValue(l)) => Value::Array(l.values.into_iter().map(json_of).collect()),
        Some(Kind::StructValue(s)) => {
            Value::Object(s.fields.into_iter().map(|(k, v)| (k, json_of(v))).collect())
        }
    }
}

/// A collection on a Qdrant server.
pub struct ServerIndex {
    name: String,
    client: Qdrant,
    rt: tokio::runtime::Runtime,
    erasure: super::ErasureSchedule,
}

impl std::fmt::Debug for ServerIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerIndex")
            .field("name", &self.name)
            .finish()
    }
}

/// A client of the server at `url`: TLS (native roots) when the scheme is `https`, the API key
/// sent with every request when given.
fn client(url: &str, api_key: Option<&str>) -> Result<Qdrant, VectorError> {
    let mut b = Qdrant::from_url(url);
    if let Some(k) = api_key {
        b = b.api_key(k.to_owned());
    }
    b.build().map_err(err)
}

impl ServerIndex {
    /// Connects to `url` (with `api_key`, if any; TLS for `https://`) and creates collection
    /// `name` (with its payload indexes) unless it exists. Blocking: call it off the async
    /// executor.
    pub fn open(
        url: &str,
        api_key: Option<&str>,
        name: &str,
        dim: usize,
    ) -> Result<Self, VectorError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(err)?;
        let client = client(url, api_key)?;
        rt.block_on(async {
            if client.collection_exists(name).await.map_err(err)? {
                return Ok::<_, VectorError>(());
            }
            let mut vectors = VectorsConfigBuilder::default();
            vectors.add_named_vector_params(
                DENSE,
                VectorParamsBuilder::new(dim as u64, Distance::Cosine),
            );
            let mut sparse = SparseVectorsConfigBuilder::default();
            sparse.add_named_vector_params(
                SPARSE,
                SparseVectorParamsBuilder::default()
                    .modifier(qdrant_client::qdrant::Modifier::Idf as i32),
            );
            client
                .create_collection(
                    CreateCollectionBuilder::new(name)
                        .vectors_config(vectors)
                        .sparse_vectors_config(sparse),
                )
                .await
                .map_err(err)?;
            for (field, kind) in payload_indexes() {
                let b = match kind {
                    FieldType::Keyword { tenant } => {
                        CreateFieldIndexCollectionBuilder::new(name, field, QFieldType::Keyword)
                            .field_index_params(
                                KeywordIndexParamsBuilder::default().is_tenant(tenant),
                            )
                    }
                    FieldType::Integer => {
                        CreateFieldIndexCollectionBuilder::new(name, field, QFieldType::Integer)
                    }
                    FieldType::Bool => {
                        CreateFieldIndexCollectionBuilder::new(name, field, QFieldType::Bool)
                    }
                };
                client.create_field_index(b.wait(true)).await.map_err(err)?;
            }
            Ok(())
        })?;
        Ok(Self {
            name: name.to_owned(),
            client,
            rt,
            erasure: super::ErasureSchedule::default(),
        })
    }

    /// A nearest-points query of `vector` under `filter`.
    fn query_points(
        &self,
        vector: QueryVector,
        filter: Filter,
        limit: usize,
    ) -> QueryPointsBuilder {
        let (input, using) = match vector {
            QueryVector::Dense(v) => (VectorInput::new_dense(v), DENSE),
            QueryVector::Sparse(s) => (VectorInput::new_sparse(s.indices, s.values), SPARSE),
        };
        QueryPointsBuilder::new(&self.name)
            .query(Query::new_nearest(input))
            .using(using)
            .filter(filter)
            .limit(limit as u64)
    }
}

/// A query's answer as point ids and scores.
fn hits(points: Vec<ScoredPoint>) -> Vec<(Uuid, f32)> {
    points
        .into_iter()
        .filter_map(|p| p.id.as_ref().and_then(uuid_of).map(|u| (u, p.score)))
        .collect()
}

impl VectorIndex for ServerIndex {
    fn collection(&self) -> &str {
        &self.name
    }

    fn erasure(&self) -> &super::ErasureSchedule {
        &self.erasure
    }

    fn upsert(&self, points: Vec<Point>) -> Result<(), VectorError> {
        if points.is_empty() {
            return Ok(());
        }
        let points: Vec<PointStruct> = points
            .into_iter()
            .map(|p| {
                let vectors: HashMap<String, Vector> = HashMap::from([
                    (DENSE.to_owned(), Vector::new_dense(p.dense)),
                    (
                        SPARSE.to_owned(),
                        Vector::new_sparse(p.sparse.indices, p.sparse.values),
                    ),
                ]);
                PointStruct::new(p.id.to_string(), vectors, p.payload)
            })
            .collect();
        self.rt
            .block_on(
                self.client
                    .upsert_points(UpsertPointsBuilder::new(&self.name, points).wait(true)),
            )
            .map_err(err)?;
        Ok(())
    }

    fn delete(&self, ids: &[Uuid]) -> Result<(), VectorError> {
        if ids.is_empty() {
            return Ok(());
        }
        let list: Vec<PointId> = ids.iter().map(|u| PointId::from(u.to_string())).collect();
        self.rt
            .block_on(
                self.client.delete_points(
                    DeletePointsBuilder::new(&self.name)
                        .points(PointsIdsList { ids: list })
                        .wait(true),
                ),
            )
            .map_err(err)?;
        Ok(())
    }

    fn query(
        &self,
        vector: QueryVector,
        f: &Value,
        limit: usize,
    ) -> Result<Vec<(Uuid, f32)>, VectorError> {
        let req = self.query_points(vector, filter(f)?, limit);
        let resp = self.rt.block_on(self.client.query(req)).map_err(err)?;
        Ok(hits(resp.result))
    }

    /// One round trip: the queries as one batch.
    fn query_each(
        &self,
        queries: Vec<(QueryVector, usize)>,
        f: &Value,
    ) -> Result<Vec<Vec<(Uuid, f32)>>, VectorError> {
        let filter = filter(f)?;
        let asked = queries.len();
        let batch: Vec<QueryPoints> = queries
            .into_iter()
            .map(|(vector, limit)| self.query_points(vector, filter.clone(), limit).build())
            .collect();
        let resp = self
            .rt
            .block_on(
                self.client
                    .query_batch(QueryBatchPointsBuilder::new(&self.name, batch)),
            )
            .map_err(err)?;
        if resp.result.len() != asked {
            return Err(err(format!(
                "a batch of {asked} queries was answered with {} lists",
                resp.result.len()
            )));
        }
        Ok(resp.result.into_iter().map(|r| hits(r.result)).collect())
    }

    fn count(&self, f: &Value) -> Result<usize, VectorError> {
        let resp = self
            .rt
            .block_on(
                self.client.count(
                    CountPointsBuilder::new(&self.name)
                        .filter(filter(f)?)
                        .exact(true),
                ),
            )
            .map_err(err)?;
        Ok(resp.result.map_or(0, |r| r.count as usize))
    }

    fn scan(&self) -> Result<Scanned, VectorError> {
        let mut out = Vec::new();
        let mut offset: Option<PointId> = None;
        loop {
            let mut req = ScrollPointsBuilder::new(&self.name)
                .limit(1_000)
                .with_payload(true);
            if let Some(o) = offset.take() {
                req = req.offset(o);
            }
            let resp = self.rt.block_on(self.client.scroll(req)).map_err(err)?;
            for p in resp.result {
                if let Some(u) = p.id.as_ref().and_then(uuid_of) {
                    let payload = p
                        .payload
                        .into_iter()
                        .map(|(k, v)| (k, json_of(v)))
                        .collect();
                    out.push((u, payload));
                }
            }
            match resp.next_page_offset {
                Some(o) => offset = Some(o),
                None => break,
            }
        }
        out.sort_by_key(|(u, _)| *u);
        Ok(out)
    }
}

/// Legacy collections on a Qdrant server, read by `kledger migrate vectors --from-url`.
pub struct LegacyServer {
    client: Qdrant,
    rt: tokio::runtime::Runtime,
}

impl std::fmt::Debug for LegacyServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacyServer").finish_non_exhaustive()
    }
}

/// A point id as the export format writes it: a UUID string or an integer.
fn id_json(id: &PointId) -> Value {
    match &id.point_id_options {
        Some(PointIdOptions::Uuid(s)) => Value::String(s.clone()),
        Some(PointIdOptions::Num(n)) => Value::from(*n),
        None => Value::Null,
    }
}

/// Dense vectors as the export format writes them: an array (the unnamed vector) or an object
/// of named ones; sparse and multi-vectors are left out.
fn vectors_json(v: Option<qdrant_client::qdrant::VectorsOutput>) -> Value {
    use qdrant_client::qdrant::vector_output::Vector;
    use qdrant_client::qdrant::vectors_output::VectorsOptions;
    let dense = |o: qdrant_client::qdrant::VectorOutput| match o.into_vector() {
        Vector::Dense(d) => Some(Value::from(d.data)),
        _ => None,
    };
    match v.and_then(|v| v.vectors_options) {
        Some(VectorsOptions::Vector(o)) => dense(o).unwrap_or(Value::Null),
        Some(VectorsOptions::Vectors(named)) => Value::Object(
            named
                .vectors
                .into_iter()
                .filter_map(|(k, o)| dense(o).map(|d| (k, d)))
                .collect(),
        ),
        None => Value::Null,
    }
}

impl LegacyServer {
    /// Connects to the server at `url` (gRPC; with `api_key`, if any; TLS for `https://`).
    /// Blocking: call it off the async executor.
    pub fn connect(url: &str, api_key: Option<&str>) -> Result<Self, VectorError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(err)?;
        let client = client(url, api_key)?;
        Ok(Self { client, rt })
    }

    /// The server's collections, in name order.
    pub fn collections(&self) -> Result<Vec<String>, VectorError> {
        let resp = self
            .rt
            .block_on(self.client.list_collections())
            .map_err(err)?;
        let mut names: Vec<String> = resp.collections.into_iter().map(|c| c.name).collect();
        names.sort();
        Ok(names)
    }

    /// Every point of `collection` (payload and vectors), page by page, in the export format.
    pub fn for_each_point(
        &self,
        collection: &str,
        f: &mut dyn FnMut(Value) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut offset: Option<PointId> = None;
        loop {
            let mut req = ScrollPointsBuilder::new(collection)
                .limit(256)
                .with_payload(true)
                .with_vectors(true);
            if let Some(o) = offset.take() {
                req = req.offset(o);
            }
            let resp = self.rt.block_on(self.client.scroll(req)).map_err(err)?;
            for p in resp.result {
                let payload: serde_json::Map<String, Value> = p
                    .payload
                    .into_iter()
                    .map(|(k, v)| (k, json_of(v)))
                    .collect();
                f(serde_json::json!({
                    "id": p.id.as_ref().map_or(Value::Null, id_json),
                    "vector": vectors_json(p.vectors),
                    "payload": payload,
                }))?;
            }
            match resp.next_page_offset {
                Some(o) => offset = Some(o),
                None => return Ok(()),
            }
        }
    }
}
