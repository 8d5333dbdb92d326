"""The pages: each a function of the dashboard's data and the request's query, returning HTML.

``layout`` is the shell every page shares (navigation, the live-update script); ``queues``,
``jobs``, ``job``, ``topology`` and ``simulations`` are the pages themselves.
"""
