"""The sample corpus: 40 papers as listing pages (``*.txt``), the corpus ``paperchat serve`` and ``chat`` start
on and the seed eval set is written against.

pyproject installs this folder as the resource package ``rag.sample`` so that ``rag.resources`` finds it
through importlib.resources, in a checkout's editable install and in an installed wheel alike."""
