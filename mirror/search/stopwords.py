"""The function words of the other languages a query is recognised in (the English ones are
mirror.search.lexical.STOPWORDS). Pure data.

Why: an other-language question keeps its articles and prepositions ("el", "de", "que",
"um", "para") as terms otherwise, and those match every page in its language; among those
pages (mirror.search.language puts them first) the one that repeats them most then ranks
ahead of the one holding the question's real words.
"""

from __future__ import annotations

# fmt: off
# The function words of the other languages the corpus holds that write spaces between words
# (articles, pronouns, prepositions, conjunctions, auxiliaries, question words), as typed with
# or without their accents (a reader often leaves them out of a query). Only function words: a content word
# that is also a sign of the language in mirror.search.language ("navegador", "usuario")
# stays a term.
OTHER = {
    "es": frozenset((
        "a", "al", "algo", "como", "cómo", "con", "cual", "cuál", "cuando", "cuándo", "de",
        "del", "desde", "donde", "dónde", "el", "él", "ella", "en", "entre", "es", "esa", "ese",
        "eso", "esta", "está", "estan", "están", "este", "esto", "hay", "hasta", "la", "las",
        "le", "les", "lo", "los", "me", "mi", "mis", "muy", "ni", "no", "nos", "o", "para",
        "pero", "por", "porque", "puedo", "que", "qué", "se", "si", "sí", "sin", "sobre", "son",
        "su", "sus", "te", "tu", "tus", "un", "una", "unas", "uno", "unos", "y", "ya", "yo",
    )),
    "pt": frozenset((
        "a", "à", "ao", "aos", "as", "às", "com", "como", "da", "das", "de", "do", "dos", "e",
        "é", "ela", "ele", "em", "entre", "essa", "esse", "esta", "está", "este", "eu", "isso",
        "isto", "mas", "meu", "minha", "na", "nas", "nao", "não", "no", "nos", "num", "numa",
        "o", "os", "ou", "para", "pela", "pelas", "pelo", "pelos", "por", "posso", "qual",
        "quando", "que", "quê", "se", "sem", "ser", "seu", "seus", "sua", "suas", "são", "sao",
        "sobre", "um", "uma", "umas", "uns",
    )),
    "de": frozenset((
        "auf", "aus", "bei", "beim", "bin", "das", "dass", "dem", "den", "der", "des", "die",
        "ein", "eine", "einem", "einen", "einer", "eines", "es", "für", "fur", "hat", "ich",
        "im", "in", "ist", "kann", "man", "mit", "nach", "nicht", "oder", "sich", "sie", "sind",
        "so", "um", "und", "von", "vom", "was", "wie", "wir", "wird", "zu", "zum", "zur",
    )),
    "fr": frozenset((
        "à", "au", "aux", "avec", "ce", "ces", "cette", "comment", "dans", "de", "des", "du",
        "elle", "en", "est", "et", "il", "je", "la", "le", "les", "leur", "ma", "mais", "me",
        "mes", "mon", "ne", "ou", "où", "par", "pas", "pour", "qu", "que", "qui", "sa", "se",
        "ses", "son", "sont", "sur", "un", "une", "vos", "votre", "y",
    )),
    # Russian (its one-letter words look like Latin letters: they are Cyrillic).
    "ru": frozenset((
        "а", "без", "в", "во", "вы", "да", "для", "до", "его", "ее", "её", "если", "же", "за",  # noqa: RUF001 (Cyrillic)
        "и", "из", "или", "их", "к", "как", "ко", "который", "которые", "ли", "мне", "мой",
        "мы", "на", "над", "не", "нет", "но", "о", "об", "от", "по", "под", "при", "с", "со",  # noqa: RUF001 (Cyrillic)
        "так", "то", "у", "что", "чтобы", "это", "этот", "я",  # noqa: RUF001 (Cyrillic)
    )),
}
# fmt: on
