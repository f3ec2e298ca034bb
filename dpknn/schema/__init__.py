"""Public domains of the attributes, conditions on them, their discretisation, marginal tables and schema drafts."""

from dpknn.schema.attributes import (
    DRAFT_KEY,
    Categorical,
    Continuous,
    EncodedData,
    Ordinal,
    Schema,
    Universe,
    blank_outside_universes,
    check_draft,
    observed_outside_universes,
    warn_outside_universes,
)
from dpknn.schema.conditions import (
    check_condition,
    condition_mask,
    conditions_mask,
    describe_conditions,
    public_conditions,
)
from dpknn.schema.discretization import Discretization, check_attributes, geometric_edges, read_attributes
from dpknn.schema.draft import SchemaDraft, draft_schema
from dpknn.schema.geometry import (
    diameter,
    embed,
    one_hot,
    query_until_certified,
    scaled_column,
    squared_distance,
)
from dpknn.schema.marginals import count_tables, extended_codes, observed_block

__all__ = [
    "DRAFT_KEY",
    "Categorical",
    "Continuous",
    "Discretization",
    "EncodedData",
    "Ordinal",
    "Schema",
    "SchemaDraft",
    "Universe",
    "blank_outside_universes",
    "check_attributes",
    "check_condition",
    "check_draft",
    "condition_mask",
    "conditions_mask",
    "count_tables",
    "describe_conditions",
    "diameter",
    "draft_schema",
    "embed",
    "extended_codes",
    "geometric_edges",
    "observed_block",
    "observed_outside_universes",
    "one_hot",
    "public_conditions",
    "query_until_certified",
    "read_attributes",
    "scaled_column",
    "squared_distance",
    "warn_outside_universes",
]
