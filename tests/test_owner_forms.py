"""The owner's form recipe (api/owner/forms.py) over the API's real schemas: a form becomes the
JSON body the same schema loads, and a refusal comes back beside each field, in words, in the
reader's language, with what was typed kept. No database: the converter is pure."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from multidict import MultiDict

from api.contents.schemas import (
    AssetCreateSchema,
    BeneficiaryCreateSchema,
    BeneficiaryPatchSchema,
    GuardianCreateSchema,
    MessageCreateSchema,
)
from api.owner.forms import FormState, form_to_body, in_words, load
from core.errors import BadRequest, Conflict, validation_error
from core.text import i18n
from tests.i18n_helpers import PSEUDO, pseudo, pseudo_text

WALLET = "GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7"
HEIR_ID = "7d1f6b4e-2c7a-4c55-9d2e-6c0b1f7a9e11"
OTHER_ID = "0b4a0a52-6a0f-47c5-8a51-4b0f6d9c2d33"


def form(*pairs: tuple[str, str]) -> MultiDict[str]:
    return MultiDict(pairs)


def heir_form(**overrides: str) -> MultiDict[str]:
    fields = {
        "formToken": "not-a-field",
        "name": "Ana Souza",
        "relationship": "daughter",
        "email": "ana@example.org",
        "allocationPercentage": "25",
        "locale": "es",
        "timeZone": "",
        **overrides,
    }
    return MultiDict(fields)


def test_an_heirs_form_is_the_body_the_api_takes_and_the_same_schema_loads_it():
    body = form_to_body(BeneficiaryCreateSchema(), heir_form())
    # Digits become a number, an empty nullable field null, the form's token is no field.
    assert body == {
        "name": "Ana Souza",
        "relationship": "daughter",
        "email": "ana@example.org",
        "allocationPercentage": 25,
        "locale": "es",
        "timeZone": None,
    }
    loaded = BeneficiaryCreateSchema().load(body)
    assert loaded["allocation_percentage"] == Decimal(25) and loaded["time_zone"] is None


def test_a_share_written_with_a_decimal_comma_or_point_is_the_same_number():
    assert (
        form_to_body(BeneficiaryCreateSchema(), heir_form(allocationPercentage="12,5"))[
            "allocationPercentage"
        ]
        == 12.5
    )
    assert (
        form_to_body(BeneficiaryCreateSchema(), heir_form(allocationPercentage=" 33.33 "))[
            "allocationPercentage"
        ]
        == 33.33
    )


def test_a_figure_that_is_no_number_reaches_the_schema_as_typed_and_is_said_in_words():
    loaded, state = load(BeneficiaryCreateSchema(), heir_form(allocationPercentage="a quarter"))
    assert loaded is None
    assert state.errors == {"allocationPercentage": ["Please write a number, such as 25 or 12.5."]}
    assert state.value("allocationPercentage") == "a quarter"  # what was typed is kept


def test_an_empty_required_field_is_absent_and_reads_please_fill_this_in():
    loaded, state = load(BeneficiaryCreateSchema(), heir_form(name="", email="   "))
    assert loaded is None
    assert state.errors["name"] == ["Please fill this in."]
    assert state.errors["email"] == ["Please fill this in."]
    assert state.value("relationship") == "daughter"


def test_each_complaint_stands_beside_its_own_field_in_words():
    _, state = load(
        BeneficiaryCreateSchema(),
        heir_form(email="ana.example.org", allocationPercentage="101", relationship="x" * 61),
    )
    assert state.errors == {
        "email": ["This does not look like an email address: it should read like name@example.org."],
        "allocationPercentage": ["Please write a share greater than 0 and at most 100."],
        "relationship": ["Please use at most 60 characters."],
    }
    assert not state.general


def test_a_guardian_without_a_wallet_posts_an_empty_field_which_is_null():
    body = form_to_body(
        GuardianCreateSchema(), form(("name", "Bo"), ("email", "bo@example.org"), ("walletAddress", ""))
    )
    assert body == {"name": "Bo", "email": "bo@example.org", "walletAddress": None}
    assert GuardianCreateSchema().load(body)["wallet_address"] is None


def test_a_wallet_that_is_no_stellar_address_is_said_in_words():
    _, state = load(
        GuardianCreateSchema(), form(("name", "Bo"), ("email", "bo@example.org"), ("walletAddress", "GABC"))
    )
    assert state.errors["walletAddress"][0].startswith("This is not a Stellar wallet address")
    loaded, _ = load(
        GuardianCreateSchema(), form(("name", "Bo"), ("email", "bo@example.org"), ("walletAddress", WALLET))
    )
    assert loaded is not None and loaded["wallet_address"] == WALLET


def test_dotted_names_nest_a_checkbox_is_true_and_repeated_names_are_a_list():
    message = form(
        ("content", "Dear Ana"),
        ("releaseRule.kind", "on_release"),
        ("releaseRule.value", ""),
        ("audience.beneficiaryIds", HEIR_ID),
        ("audience.beneficiaryIds", OTHER_ID),
        ("audience.beneficiaryIds", ""),
    )
    body = form_to_body(MessageCreateSchema(), message)
    assert body["releaseRule"] == {"kind": "on_release", "value": None}
    assert body["audience"] == {"beneficiaryIds": [HEIR_ID, OTHER_ID]}
    loaded = MessageCreateSchema().load(body)
    assert loaded["audience"] == {"all": False, "beneficiary_ids": [HEIR_ID, OTHER_ID]}

    everyone = form(
        ("content", "Dear all"),
        ("releaseRule.kind", "after_release"),
        ("releaseRule.value", "30"),
        ("audience.all", "false"),  # the hidden field before the box
        ("audience.all", "on"),  # the box, ticked
    )
    body = form_to_body(MessageCreateSchema(), everyone)
    assert body["audience"] == {"all": True} and body["releaseRule"] == {"kind": "after_release", "value": 30}
    assert MessageCreateSchema().load(body)["release_rule"] == {"kind": "after_release", "value": 30}

    dated = form_to_body(
        MessageCreateSchema(),
        form(("content", "x"), ("releaseRule.kind", "on_date"), ("releaseRule.value", "2040-05-01")),
    )
    assert MessageCreateSchema().load({**dated, "audience": {"all": True}})["release_rule"]["value"] == date(
        2040, 5, 1
    )


def test_an_unticked_box_alone_is_false_and_nothing_at_all_is_absent():
    assert form_to_body(AssetCreateSchema(), form(("audience.all", "false")))["audience"] == {"all": False}
    assert "audience" not in form_to_body(AssetCreateSchema(), form(("label", "House")))


def test_a_nested_refusal_stands_under_its_dotted_name():
    _, state = load(
        MessageCreateSchema(),
        form(
            ("content", "x"),
            ("releaseRule.kind", "after_release"),
            ("releaseRule.value", "0"),
            ("audience.all", "on"),
        ),
    )
    assert list(state.errors) == ["releaseRule.value"]


def test_an_amount_stays_the_decimal_string_the_api_wants():
    body = form_to_body(
        AssetCreateSchema(), form(("label", "Savings"), ("amount", "1250.50"), ("assetCode", ""))
    )
    assert body == {"label": "Savings", "amount": "1250.50", "assetCode": None}
    assert AssetCreateSchema().load(body)["amount"] == Decimal("1250.50")


def test_a_patch_form_naming_nothing_is_refused_above_the_form():
    loaded, state = load(BeneficiaryPatchSchema(), form(("formToken", "t")))
    assert loaded is None and not state.errors and len(state.general) == 1


def test_a_models_refusal_joins_the_form_beside_its_field_or_above_it():
    state = FormState(values=heir_form(allocationPercentage="60"))
    state.refuse(
        validation_error(
            {
                "allocationPercentage": [
                    "Allocations may total at most 100%: the current total is 50%, "
                    "and this would make it 110%."
                ]
            }
        ).details
    )
    assert state.errors["allocationPercentage"] == [
        "The shares may add up to at most 100%: they add up to 50% now, and this would make 110%."
    ]
    state.refuse(Conflict("This wallet is already one of your guardians").message)
    assert state.general == ["This wallet is already one of your guardians."]
    assert isinstance(validation_error({"x": ["y"]}), BadRequest)


def test_the_words_are_the_readers_language():
    with pseudo(), i18n.speaking(PSEUDO):
        _, state = load(BeneficiaryCreateSchema(), heir_form(name="", allocationPercentage="a quarter"))
        assert state.errors["name"] == [pseudo_text("Please fill this in.")]
        assert state.errors["allocationPercentage"] == [
            pseudo_text("Please write a number, such as 25 or 12.5.")
        ]
        assert in_words("Longer than maximum length 120.") == pseudo_text(
            "Please use at most {count} characters."
        ).format(count="120")
    with i18n.speaking("es"):
        assert in_words("Missing data for required field.") == "Rellene este campo, por favor."
        assert in_words("Longer than maximum length 60.") == "Use como máximo 60 caracteres."


def test_a_handler_may_add_its_own_complaint_beside_a_field():
    """The account page adds "the two addresses differ" to what the schema said."""
    _, state = load(BeneficiaryCreateSchema(), heir_form(email="x"))
    state.errors.setdefault("email", []).append("Both addresses must be the same.")
    assert state.errors["email"][-1] == "Both addresses must be the same."
    assert state.errors["email"][0].startswith("This does not look like an email address")
