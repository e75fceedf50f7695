from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models


class Person(models.Model):
    name = models.CharField(max_length=100)

    class JSONAPIMeta:
        resource_name = "people"


class Tag(models.Model):
    name = models.CharField(max_length=50)

    class JSONAPIMeta:
        resource_name = "tags"


class Article(models.Model):
    title = models.CharField(max_length=200)
    body_text = models.TextField(blank=True, default="")
    author = models.ForeignKey(Person, null=True, blank=True, related_name="articles", on_delete=models.SET_NULL)
    tags = models.ManyToManyField(Tag, blank=True, related_name="articles")

    class JSONAPIMeta:
        resource_name = "articles"


class Comment(models.Model):
    body = models.TextField()
    article = models.ForeignKey(Article, related_name="comments", on_delete=models.CASCADE)
    author = models.ForeignKey(Person, null=True, blank=True, related_name="comments", on_delete=models.SET_NULL)

    class JSONAPIMeta:
        resource_name = "comments"


class Note(models.Model):
    """A note on an article or a tag: `commentable` is polymorphic (its linkage's type says which)."""

    body = models.TextField()
    content_type = models.ForeignKey(ContentType, null=True, blank=True, on_delete=models.CASCADE)
    object_id = models.PositiveIntegerField(null=True, blank=True)
    commentable = GenericForeignKey("content_type", "object_id")

    class JSONAPIMeta:
        resource_name = "notes"
