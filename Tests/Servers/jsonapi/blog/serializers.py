from rest_framework.exceptions import ValidationError
from rest_framework_json_api import serializers
from rest_framework_json_api.relations import ResourceRelatedField
from rest_framework_json_api.utils import get_resource_type_from_instance

from blog.models import Article, Comment, Note, Person, Tag


class PersonSerializer(serializers.ModelSerializer):
    # Links whose URLs no template of the client predicts: the related list at
    # /api/writers/<id>/writings, the relationship itself at /api/writers/<id>/links/articles.
    articles = ResourceRelatedField(
        many=True,
        read_only=True,
        related_link_view_name="writer-writings",
        related_link_url_kwarg="person_pk",
        self_link_view_name="writer-links",
    )

    class Meta:
        model = Person
        fields = ["name", "articles"]


class TagSerializer(serializers.ModelSerializer):
    # Resource meta: {"meta": {"article-count": 2}}.
    article_count = serializers.SerializerMethodField()

    def get_article_count(self, tag):
        return tag.articles.count()

    class Meta:
        model = Tag
        fields = ["name"]
        meta_fields = ["article_count"]


class ArticleSerializer(serializers.ModelSerializer):
    author = ResourceRelatedField(queryset=Person.objects, required=False, allow_null=True)
    tags = ResourceRelatedField(queryset=Tag.objects, many=True, required=False)
    comments = ResourceRelatedField(many=True, read_only=True)

    included_serializers = {
        "author": "blog.serializers.PersonSerializer",
        "tags": "blog.serializers.TagSerializer",
        "comments": "blog.serializers.CommentSerializer",
    }

    class Meta:
        model = Article
        fields = ["title", "body_text", "author", "tags", "comments"]


class CommentSerializer(serializers.ModelSerializer):
    article = ResourceRelatedField(queryset=Article.objects)
    author = ResourceRelatedField(queryset=Person.objects, required=False, allow_null=True)

    included_serializers = {
        "article": "blog.serializers.ArticleSerializer",
        "author": "blog.serializers.PersonSerializer",
    }

    class Meta:
        model = Comment
        fields = ["body", "article", "author"]


class CommentableField(ResourceRelatedField):
    """A polymorphic to-one: an article or a tag, by the linkage's type."""

    types = {"articles": Article, "tags": Tag}

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            self.fail("incorrect_type", data_type=type(data).__name__)
        if "type" not in data:
            self.fail("missing_type")
        if "id" not in data:
            self.fail("missing_id")
        model = self.types.get(data["type"])
        if model is None:
            raise ValidationError(f"'{data['type']}' is not a type a note can be on (articles, tags)")
        try:
            return model.objects.get(pk=data["id"])
        except (model.DoesNotExist, ValueError, TypeError):
            self.fail("does_not_exist", pk_value=data["id"])

    def to_representation(self, value):
        return {"type": get_resource_type_from_instance(value), "id": str(value.pk)}


class NoteSerializer(serializers.ModelSerializer):
    commentable = CommentableField(queryset=Article.objects, required=False, allow_null=True)

    class Meta:
        model = Note
        fields = ["body", "commentable"]
