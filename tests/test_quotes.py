"""The passage an answer quotes (pure): prose sentences of one paragraph, never a heading,
code, a table or markup; question words found in every script."""

from __future__ import annotations

from mirror.search.quotes import MIN_CHARS, best, paragraphs

# From tensorflow.org/hub/caching (the corpus page, abridged).
CACHING = """# Caching model downloads from TF Hub

## Overview

The tensorflow_hub library currently supports two modes for downloading models. By default, \
a model is downloaded as a compressed archive and cached on disk. Secondly, models can directly \
be read from remote storage into TensorFlow.

```python
os.environ["TFHUB_CACHE_DIR"] = "/my_module_cache"
```

| Mode | Cached |
| ---- | ------ |
| compressed | yes |
"""

# From tensorflow.org/hub/model_compatibility: an HTML table whose cells are lines of tags.
COMPATIBILITY = """<table>
  <tr>
    <td>
      Fully supported. Use the custom model_fn guide.
      <br/><div style="font-style: italic; font-size: 14px;">
        Note: hub.KerasLayer <span style="font-weight: bold;">does not</span>
        fill in graph collections like the old tf.compat.v1.layers or hub.Module
        APIs did.
      </div>
    </td>
    <td>
      Fully supported (<a href="https://www.tensorflow.org/hub/tf2_saved_model#fine-tuning">complete TF2 SavedModel fine-tuning guide</a>).
    </td>
  </tr>
</table>"""


def test_a_heading_is_never_quoted():
    quote = best([CACHING], "How do I cache TF Hub model downloads?")
    assert quote is not None and quote.score > 0
    assert "Caching model downloads from TF Hub" not in quote.text
    assert "Overview" not in quote.text
    assert quote.text.startswith("By default, a model is downloaded as a compressed archive")


def test_code_and_tables_are_not_prose():
    texts = paragraphs(CACHING)
    assert len(texts) == 1 and texts[0].startswith("The tensorflow_hub library")
    assert best([CACHING], "TFHUB_CACHE_DIR my_module_cache").text.startswith("The tensorflow")


def test_a_short_sentence_is_quoted_with_the_sentences_after_it_in_its_paragraph():
    quote = best([CACHING], "compressed archive on disk")
    assert quote.text == (
        "By default, a model is downloaded as a compressed archive and cached on disk. Secondly, "
        "models can directly be read from remote storage into TensorFlow."
    )
    assert len(quote.text) >= MIN_CHARS or quote.text.endswith("TensorFlow.")
    # ... but never the next paragraph.
    lone = best(
        ["A model is cached on disk by default.\n\nRemote storage is the other mode."], "disk"
    )
    assert lone.text == "A model is cached on disk by default."
    # ... nor a sentence that introduces code or a list the quotation leaves out.
    lead_in = best(["A model is cached on disk by default. Set the folder like this:"], "disk")
    assert lead_in.text == "A model is cached on disk by default."


def test_a_cell_of_an_html_table_is_a_paragraph_of_its_own():
    quote = best([COMPATIBILITY], "Does hub.KerasLayer fill in graph collections?")
    assert quote.text == (
        "Note: hub.KerasLayer does not fill in graph collections like the old "
        "tf.compat.v1.layers or hub.Module APIs did."
    )


def test_questions_in_scripts_without_spaces_find_their_sentence():
    # From developer.chrome.com/ja/blog/chips-origin-trial: no spaces between words, sentences
    # end with 。 and no space after it.
    passage = (
        "オリジントライアルにオプトインするフレームは、`document.cookie` や CookieStore API などの "
        "JavaScript API を介して、パーティション化された Cookie の読み取りと書き込みにアクセスできます。"
        "トライアルのスクリプトに含まれていないフレームは、パーティション化された Cookie の読み取りも"
        "書き込みもできません。<br>CHIPS オリジントライアルは現在、Service Worker ではサポートされて"
        "いません。"
    )
    quote = best([passage], "CHIPS は Service Worker で使えますか")
    assert quote is not None and quote.score > 0
    assert quote.text.startswith("CHIPS オリジントライアルは現在、Service Worker では")
    assert "<br>" not in quote.text
    # A question all in Japanese: its words are found inside runs of characters.
    quote = best([passage], "スクリプトに含まれていないフレーム")
    assert quote.score > 0 and quote.text.startswith("トライアルのスクリプトに含まれていない")


def test_no_question_word_quotes_the_opening_and_no_prose_quotes_nothing():
    quote = best([CACHING], "zebra")
    assert quote.score == 0 and quote.text.startswith("The tensorflow_hub library")
    assert best(["```js\nconst a = 1;\n```\n\n## Heading only"], "const") is None


# From tensorflow.org/r1/tutorials/images/deep_cnn: a table whose rows have no leading pipe
# (51 such tables on 25 pages of the corpus), after a sentence that answers.
CIFAR = """The code for this tutorial trains a CIFAR-10 model on multiple GPUs.

File | Purpose
--- | ---
[`cifar10_input.py`](https://github.com/x/cifar10_input.py) | Loads CIFAR-10 dataset using \
[tensorflow-datasets library](https://github.com/tensorflow/datasets).
[`cifar10_multi_gpu_train.py`](https://github.com/x/cifar10_multi_gpu_train.py) | Trains a \
CIFAR-10 model on multiple GPUs.

After the table, prose again.
"""


def test_a_table_without_leading_pipes_is_not_prose():
    assert paragraphs(CIFAR) == [
        "The code for this tutorial trains a CIFAR-10 model on multiple GPUs.",
        "After the table, prose again.",
    ]
    quote = best([CIFAR], "train a CIFAR-10 image classifier on several GPUs")
    assert quote is not None and "|" not in quote.text
    # A thematic break is not a table's delimiter row: the paragraph after it is prose.
    assert paragraphs("One line.\n\n---\n\nTwo | three are words here.") == [
        "One line.",
        "Two | three are words here.",
    ]
