"""Tests of the cluster agent and its Kubernetes stand-in; no database unless a test says so."""
