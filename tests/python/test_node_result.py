"""A dbt node's kind and name, read from its unique id in one place (lakemirror.node_result)."""

from lakemirror.node_result import NodeResult, is_model_of, node_kind, node_name


def test_kind_and_name_of_each_form_of_unique_id():
    assert [(node_kind(unique_id), node_name(unique_id)) for unique_id in (
        "model.my_project.dbo__customers",
        "model.my_project.dbo__customers.v2",
        "test.my_project.not_null_dbo__customers_id.5f1c2a",
        "seed.my_project.country_codes",
        "operation.drop_mirrored_tables",
    )] == [("model", "dbo__customers"), ("model", "dbo__customers"),
           ("test", "not_null_dbo__customers_id"), ("seed", "country_codes"),
           ("operation", "drop_mirrored_tables")]


def test_a_model_is_recognised_by_kind_and_name_not_by_a_suffix():
    models = ("dbo__t", "dbo__t__history")
    assert is_model_of("model.p.dbo__t", models)
    assert is_model_of("model.p.dbo__t__history", models)
    assert not is_model_of("model.p.x_dbo__t", models)
    assert not is_model_of("test.p.dbo__t.abc", models)
    assert not is_model_of("seed.p.dbo__t", models)
    node = NodeResult("model.p.dbo__t", "error", "boom")
    assert (node.kind, node.name, node.failed) == ("model", "dbo__t", True)
