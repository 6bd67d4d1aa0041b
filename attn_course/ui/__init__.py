"""The explorers' widgets: ipywidgets controls around the teaching views.

``widgets`` (the ``Explorer`` base class and the slider explorers of lectures 02-05 around
``explore``; ``starting_settings``, every explorer's start), ``model_explorer`` (lecture 08,
around ``model_views``) and ``lm_explorer`` (lecture 11, around ``lm_views``). Importing this
package imports nothing.
"""
