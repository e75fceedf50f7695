from rest_framework_json_api import serializers
from rest_framework_json_api.relations import ResourceRelatedField

from blog.models import Article, Comment, Person, Tag


class PersonSerializer(serializers.ModelSerializer):
    class Meta:
        model = Person
        fields = ["name"]


class TagSerializer(serializers.ModelSerializer):
    class Meta:
        model = Tag
        fields = ["name"]


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
