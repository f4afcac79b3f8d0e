"""LangChain vector store backed by vss: ``from langchain_vss import VssVectorStore``."""
from .vectorstores import VssVectorStore

__all__ = ["VssVectorStore"]
